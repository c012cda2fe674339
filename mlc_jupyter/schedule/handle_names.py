"""The names a cell gave to schedule handles, so traces read ``sch.reorder(j0, k, j1)``, not
MetaSchedule's ``sch.reorder(l4, l3, l5)``.

A trace's instructions hold the very handle objects (``LoopRV``, ``BlockRV``) the schedule gave
the cell, and every copy of the trace (``sch.trace``, a trace with another decision) holds them
too; so the names are remembered per handle, and a trace whose handles the cell never named (a
tuning record's) keeps MetaSchedule's names.
"""

from __future__ import annotations

import keyword
import re
from collections import Counter, OrderedDict
from typing import Any

from .. import tvm_compat

__all__ = ["cell_names", "learn_cell_names", "named_as_in_the_cell", "remember_names"]

#: handle -> the name a cell bound it to (first name wins); the oldest are forgotten
_NAMES: OrderedDict[Any, str] = OrderedDict()
_REMEMBERED = 20_000


def learn_cell_names(sch: Any, ns: dict[str, Any], names: dict[str, str] | None = None) -> None:
    """Remember the name each block or loop handle of ``sch``'s trace is bound to in ``ns``
    (``i, j, k = sch.get_loops(b)`` names ``l1, l2, l3``); also add trace name -> cell name to
    ``names`` (a schedule cell's own running table, where a rebound name is read in order)."""
    handles = (tvm_compat.block_rv_type(), tvm_compat.loop_rv_type())
    bound = [(name, v) for name, v in ns.items() if isinstance(v, handles)]
    for rv, trace_name in tvm_compat.trace_rv_names(sch.trace):
        cell_name = next((name for name, v in bound if v.same_as(rv)), None)
        if cell_name is None:
            continue
        if names is not None and trace_name not in names:
            names[trace_name] = cell_name
        _remember(rv, cell_name)


def remember_names(values: dict[str, Any]) -> None:
    """Remember each block or loop handle among ``values`` (name -> value) under its name."""
    if not any(type(v).__module__.startswith("tvm") for v in values.values()):
        return  # ``a, b = line.split(",")``: no handle, and no reason to import TVM
    handles = (tvm_compat.block_rv_type(), tvm_compat.loop_rv_type())
    for name, value in values.items():
        if isinstance(value, handles):
            _remember(value, name)


def _remember(rv: Any, name: str) -> None:
    """The first name a handle gets is its name."""
    if rv not in _NAMES:
        _NAMES[rv] = name
        while len(_NAMES) > _REMEMBERED:
            _NAMES.popitem(last=False)


def cell_names(trace: Any) -> dict[str, str]:
    """Trace name -> the cell's name, for each handle of ``trace`` a cell named, where the whole
    trace stays unambiguous: a name the cell gave two handles (``i`` rebound) or that is also
    another handle's trace name is left out, and those handles keep MetaSchedule's names."""
    pairs = tvm_compat.trace_rv_names(trace)
    trace_names = {name for _, name in pairs}
    named = {name: _NAMES[rv] for rv, name in pairs if rv in _NAMES}
    uses = Counter(named.values())
    return {
        old: new
        for old, new in named.items()
        if uses[new] == 1 and new not in trace_names and not keyword.iskeyword(new)
    }


#: A string literal or a name in a line of trace code.
_TOKEN = re.compile(r"\"[^\"]*\"|'[^']*'|\b[A-Za-z_]\w*\b")


def named_as_in_the_cell(lines: list[str], names: dict[str, str]) -> list[str]:
    """Trace code with its handles called what the cell called them (``sch.reorder(j0, k, j1)``
    where ``as_python`` prints ``sch.reorder(l4, l3, l5)``); strings are left alone."""
    if not names:
        return list(lines)
    return [_TOKEN.sub(lambda m: names.get(m[0], m[0]), line) for line in lines]
