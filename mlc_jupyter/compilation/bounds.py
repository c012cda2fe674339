"""Refuse a kernel that would index outside a buffer before it runs, at the line that does it.

TVM's own static analysis (:func:`~mlc_jupyter.tvm_compat.check_out_of_bounds`) proves out-of-bounds
accesses and names the buffer, dimension, index and ranges. Each finding is placed at the cell
line of its statement (TVMScript spans, mapped back by :mod:`mlc_jupyter.origins`) and, for a
module that came out of a schedule, at the first step whose module has it. It cannot decide
data-dependent indices (``A[idx[i]]``): checked builds (:mod:`.checked`) cover those at run time.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any

from .. import origins
from ..errors import OutOfBoundsError
from ..tvm_compat import (
    analyzer as new_analyzer,
)
from ..tvm_compat import (
    check_out_of_bounds,
    element_bytes,
    ir_module_type,
    prim_func_type,
    tir_nodes,
)
from .guards import guarded_in_bounds
from .tir_walk import (
    block_bindings,
    buffer_accesses,
    buffer_views,
    statements,
    viewed_allocation,
)

_FINDING = re.compile(
    r"Out of bounds memory access on buffer (?P<buffer>\S+) dimension (?P<dim>\d+)\. "
    r"index (?P<index>.+?) with bounds \[(?P<low>.+), (?P<high>.+?)\] "
    r"is outside the range \[0, (?P<extent>.+?)\]\.\s*$"
)
#: At most this many further findings are listed under the first.
_MORE = 3


@dataclass(frozen=True)
class OutOfBounds:
    """One access TVM proved out of bounds, and where it is."""

    func: str
    buffer: str
    dimension: int
    index: str
    low: str
    high: str
    extent: str
    access: str = ""
    place: origins.CellPlace | None = None
    step: origins.StepPlace | None = None
    block: str = ""
    #: for a view (``T.decl_buffer(..., data=B.data)``): the buffer whose memory it views
    views: str = ""

    @property
    def allowed(self) -> str:
        """The valid index range, ``0..127`` for an extent of 128."""
        last = str(int(self.extent) - 1) if self.extent.isdigit() else f"{self.extent} - 1"
        return f"0..{last}"

    def describe(self) -> str:
        """One line: buffer, dimension, index, its range, the allowed range, where."""
        where = f" at {self.place.describe()}" if self.place else ""
        if self.step is not None:
            where += f" (introduced by schedule step {self.step.index})"
        if self.block:
            return (
                f'{self.func}: block "{self.block}" binds {self.index}, which reaches '
                f"{self.low}..{self.high} outside the iterator's domain {self.allowed}, so "
                f"{self.access or self.buffer} goes out of bounds{where}"
            )
        allows = f"{self.buffer}, a view of {self.views}'s memory," if self.views else self.buffer
        return (
            f"{self.func}: {self.access or self.buffer} goes out of bounds{where}: index "
            f"{self.index} of dimension {self.dimension} reaches {self.low}..{self.high}, "
            f"but {allows} allows {self.allowed}"
        )


def _functions(mod: Any) -> list[tuple[str, Any]]:
    prim_func = prim_func_type()
    return [(gv.name_hint, f) for gv, f in mod.functions_items() if isinstance(f, prim_func)]


def _raw_findings(name: str, func: Any) -> list[OutOfBounds]:
    """TVM's findings for one function (its checker reports every access of a function at once).

    A checker failure that is not a finding is left to the build, which reports it better.
    """
    report = check_out_of_bounds(ir_module_type()({name: func}))
    if report:
        found = [m for m in map(_FINDING.search, report.splitlines()) if m]
        return _unguarded(func, [
            OutOfBounds(name, m["buffer"], int(m["dim"]), m["index"], m["low"], m["high"],
                        m["extent"])
            for m in found
        ])  # fmt: skip
    return []


def _unguarded(func: Any, found: list[OutOfBounds]) -> list[OutOfBounds]:
    """``found`` less the accesses a condition keeps inside their buffer.

    TVM's checker ranges an index over its loops alone; a block predicate, ``T.if_then_else``
    padding or an ``if`` around the access can keep it inside (dlight's and MetaSchedule's
    schedules of padded convolutions and of splits that do not divide). A finding stays unless
    every access it can be (same buffer and index as written; else every access of that buffer)
    is proved inside under its guards.
    """
    if not found:
        return found
    accesses = guarded_in_bounds(func, {f.buffer for f in found})

    def guarded(finding: OutOfBounds) -> bool:
        of_buffer = [(i, inside) for b, i, inside in accesses if b.name == finding.buffer]
        same = [
            inside
            for indices, inside in of_buffer
            if len(indices) > finding.dimension and str(indices[finding.dimension]) == finding.index
        ]
        candidates = same or [inside for _, inside in of_buffer]
        return bool(candidates) and all(
            len(inside) > finding.dimension and inside[finding.dimension] for inside in candidates
        )

    return [f for f in found if not guarded(f)]


def _binding_findings(name: str, func: Any) -> list[OutOfBounds]:
    """Block iterators bound to values outside their domain, which TVM's checker takes on trust
    (a split with ``disable_predication=True`` that does not divide the loop)."""
    found = []
    for block, iter_var, value, analyzer, predicated in block_bindings(func):
        span = analyzer.int_set(value)
        if predicated or span.is_everything():
            continue
        dom = iter_var.dom
        low, high = span.min_value, span.max_value
        if analyzer.can_prove(high >= dom.min + dom.extent) or analyzer.can_prove(low < dom.min):
            var = iter_var.var
            finding = OutOfBounds(
                name, "", 0, f"{var.name} = {value}", str(low), str(high), str(dom.extent),
                block=str(block.name_hint),
            )  # fmt: skip
            found.append(_locate_binding(block, var, finding))
    return found


def _locate_binding(block: Any, var: Any, finding: OutOfBounds) -> OutOfBounds:
    """``finding`` with the first access of ``block`` that indexes with ``var``."""
    uses = re.compile(r"\b" + re.escape(var.name) + r"\b")
    for buffer, indices, _, stmt in buffer_accesses(block.body):
        for dimension, index in enumerate(indices):
            if uses.search(str(index)):
                place = origins.cell_place(getattr(stmt, "span", None))
                access = _access_text(buffer, indices)
                return _with(finding, buffer=buffer.name, dimension=dimension, access=access,
                             place=place)  # fmt: skip
    return finding


def _view_findings(name: str, func: Any) -> list[OutOfBounds]:
    """Accesses through a flat view (``V = T.decl_buffer((n,), data=B.data)``) that reach past
    the memory it views, which TVM's checker measures against the shape ``V`` declares. Only a
    view with constant sizes that declares more than its memory holds is looked at, and an
    access a condition keeps inside is left alone, as for TVM's findings."""
    views = buffer_views(func.body)
    sizes = {}
    for view in views:
        owner = viewed_allocation(view, views)
        dims = [*owner.shape, *view.shape, view.elem_offset]
        if len(view.shape) != 1 or not all(str(d).isdigit() for d in dims):
            continue
        total = 1
        for dim in owner.shape:
            total *= int(dim)
        room = total * element_bytes(owner.dtype) // element_bytes(view.dtype)
        room -= int(view.elem_offset)
        if int(view.shape[0]) > room:
            sizes[view.name] = (room, owner.name)
    if not sizes:
        return []
    ranges = _loop_ranges(func)
    statements = {(b.name, str(list(i))): stmt for b, i, _, stmt in buffer_accesses(func.body)}
    found = []
    for buffer, indices, kept in guarded_in_bounds(
        func, set(sizes), {n: (r,) for n, (r, _) in sizes.items()}
    ):
        room, owner = sizes[buffer.name]
        span = ranges.int_set(indices[0])
        if kept[0] or span.is_everything() or not str(span.max_value).lstrip("-").isdigit():
            continue
        if int(str(span.max_value)) >= room:
            stmt = statements.get((buffer.name, str(list(indices))))
            place = origins.cell_place(getattr(stmt, "span", None))
            found.append(OutOfBounds(
                name, buffer.name, 0, str(indices[0]), str(span.min_value), str(span.max_value),
                str(room), access=_access_text(buffer, indices), place=place, views=owner,
            ))  # fmt: skip
    return found


def _loop_ranges(func: Any) -> Any:
    """An analyzer that knows every loop's and block iterator's range in ``func``."""
    nodes = tir_nodes()
    ranges = new_analyzer()
    for node in statements(func.body):
        if isinstance(node, nodes.For):
            extent = nodes.Range.from_min_extent(node.min, node.extent)
            ranges.bind(node.loop_var, extent, allow_override=True)
        elif isinstance(node, nodes.Block):
            for iter_var in node.iter_vars:
                ranges.bind(iter_var.var, iter_var.dom, allow_override=True)
    return ranges


def _access_text(buffer: Any, indices: Any) -> str:
    return f"{buffer.name}[{', '.join(str(i) for i in indices)}]"


def _locate(func: Any, finding: OutOfBounds) -> OutOfBounds:
    """``finding`` with the access as written in the IR and the cell place of its statement."""
    fallback = None
    for buffer, indices, _, stmt in buffer_accesses(func.body):
        if buffer.name != finding.buffer or len(indices) <= finding.dimension:
            continue
        place = origins.cell_place(getattr(stmt, "span", None))
        located = _with(finding, access=_access_text(buffer, indices), place=place)
        if str(indices[finding.dimension]) == finding.index:
            return located
        fallback = fallback or located
    return fallback or finding


def _with(finding: OutOfBounds, **changes: Any) -> OutOfBounds:
    return dataclasses.replace(finding, **changes)


def _introduced_by(name: str, func: Any, finding: OutOfBounds) -> origins.StepPlace | None:
    """The first schedule step whose module has ``finding`` (None: the unscheduled one has it)."""
    recorded = origins.schedule_history(func)
    if recorded is None:
        return None
    history, last = recorded

    def has_it(mod: Any) -> bool:
        funcs = dict(_functions(mod))
        candidate = funcs.get(name) or (next(iter(funcs.values())) if len(funcs) == 1 else None)
        if candidate is None:
            return False
        found = _raw_findings(name, candidate) + _binding_findings(name, candidate)
        return any(f.buffer == finding.buffer for f in found)

    if has_it(history.initial):
        return None
    for step, mod in history.steps[: last + 1]:
        if has_it(mod):
            return step
    return None


def find_out_of_bounds(mod: Any) -> list[OutOfBounds]:
    """Every access of ``mod``'s TIR functions that TVM proves out of bounds, located."""
    found = []
    for name, func in _functions(mod):
        for finding in _raw_findings(name, func):
            finding = _locate(func, finding)
            found.append(_with(finding, step=_introduced_by(name, func, finding)))
        for finding in _binding_findings(name, func):
            found.append(_with(finding, step=_introduced_by(name, func, finding)))
        found.extend(_view_findings(name, func))
    return found


def check_bounds(mod: Any) -> None:
    """Raise :class:`OutOfBoundsError` for the first out-of-bounds access in ``mod``."""
    found = find_out_of_bounds(mod)
    if found:
        raise out_of_bounds_error(found)


def out_of_bounds_error(found: list[OutOfBounds]) -> OutOfBoundsError:
    """The error for ``found``: the first access with its cell line, the others one line each."""
    first = found[0]
    where: list[str] = []
    if first.place is not None:
        place = first.place
        defines = f" (the cell defining {', '.join(place.defines)})" if place.defines else ""
        where.append(f"  {place.describe()}{defines}:")
        gutter = f"  {place.line:>4} | "
        where.append(gutter + place.text.rstrip())
        column, span = _caret(place.text, first.buffer, place.column)
        where.append(" " * (len(gutter) + column - 1) + "^" * span)
    if first.step is not None:
        where.append(
            f"  introduced by schedule step {first.step.index} (%%mlc_schedule line "
            f"{first.step.line}): "
            f"{first.step.source.strip().splitlines()[0]}"
        )
    for other in found[1:][:_MORE]:
        where.append(f"  also: {other.describe()}")
    if len(found) > _MORE + 1:
        where.append(f"  ... and {len(found) - _MORE - 1} more")
    hint = (
        "nothing ran. An index must stay inside its buffer: compare the T.axis domains, the "
        "loop extents and any +/- offset with the buffer's shape"
    )
    if first.step is not None:
        hint = f"nothing ran. Step {first.step.index} made an index leave its buffer; undo it or change its arguments"
    return OutOfBoundsError(first.describe(), where=where, hint=hint)


def _caret(text: str, buffer: str, column: int) -> tuple[int, int]:
    """Column and width of ``buffer[...]`` on ``text`` (at or after ``column``), for the caret."""
    found = re.compile(r"\b" + re.escape(buffer) + r"\s*\[").search(text, max(0, column - 1))
    found = found or re.compile(r"\b" + re.escape(buffer) + r"\s*\[").search(text)
    if not found:
        return column, 1
    depth, end = 0, len(text)
    for position in range(found.end() - 1, len(text)):
        depth += {"[": 1, "]": -1}.get(text[position], 0)
        if depth == 0:
            end = position + 1
            break
    return found.start() + 1, end - found.start()


def _reads_memory(index: Any) -> bool:
    """True when an index expression loads from a buffer (``idx[i]``): only run time can tell."""
    return any(True for _ in buffer_accesses(index))


def stopped_out_of_bounds(mod: Any, name: str) -> OutOfBoundsError:
    """The error for a checked kernel that stopped at a bound check: it names the accesses whose
    index depends on data, the ones static analysis could not bound, and the views of another
    buffer's memory (checked against that memory)."""
    suspects: list[str] = []
    for func_name, func in _functions(mod):
        views = buffer_views(func.body)
        for buffer, indices, _, stmt in buffer_accesses(func.body):
            if any(_reads_memory(i) for i in indices):
                place = origins.cell_place(getattr(stmt, "span", None))
                at = f" ({place.describe()})" if place else ""
                suspects.append(
                    f"  data-dependent index: {func_name}: {_access_text(buffer, indices)}{at}"
                )
        for view, (viewed, stmt) in views.items():
            owner = viewed_allocation(view, views)
            place = origins.cell_place(getattr(stmt, "span", None))
            at = f" ({place.describe()})" if place else ""
            suspects.append(
                f"  view: {func_name}: {view.name} is declared over {viewed.name}.data{at}; its "
                f"accesses may not leave {owner.name}'s {_elements(owner)}"
            )
    has_views = any(s.startswith("  view:") for s in suspects)
    suspects = list(dict.fromkeys(suspects))
    where = suspects[:_MORE] + (
        [f"  ... and {len(suspects) - _MORE} more"] if len(suspects) > _MORE else []
    )
    return OutOfBoundsError(
        f"{name}: an index left its buffer at run time; the checked build stopped the kernel "
        "before that access",
        where=where,
        hint="memory is intact. Check the values that feed the index (the index arrays, or the "
        "sizes of symbolic shapes)"
        + (
            ", and that each T.decl_buffer view fits in the buffer whose data it takes"
            if has_views
            else ""
        ),
    )


def _elements(buffer: Any) -> str:
    """``16 float32`` for a buffer of shape (4, 4)."""
    size = 1
    for dim in buffer.shape:
        size = size * dim if not str(dim).isdigit() else size * int(str(dim))
    return f"{size} {buffer.dtype}"
