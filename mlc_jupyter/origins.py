"""Where IR came from: the cell line a TIR statement was typed on, the schedule step that made it.

TVMScript gives each parsed statement a span in the cell's own file name (``<mlc-cell-N>``) that
survives scheduling; :func:`remember_cell` keeps what it takes to turn such a span back into the
cell line as typed; an ordinary cell in course mode carries IPython's file name for the cell
instead, and :func:`remember_python_cell` finds it by the text of that file. A schedule run records its steps (:func:`remember_schedule`), so a module
built later can be traced to the step that produced it. Both registries are small and bounded:
an error can be located as long as its cell is among the last few hundred parsed.
"""

from __future__ import annotations

import linecache
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from .dialect import Translation
from .tvm_compat import structural_hash

_MAX_CELLS = 512
_MAX_SCHEDULED = 2048


@dataclass(frozen=True)
class CellPlace:
    """A place in a cell as the user typed it (lines count the magic line as line 1)."""

    cell: str
    line: int
    column: int
    text: str
    defines: tuple[str, ...] = ()

    def describe(self) -> str:
        """``In [3] line 25`` (or ``cell line 25`` when the cell has no number)."""
        return f"{self.cell} line {self.line}"


@dataclass(frozen=True)
class _Cell:
    translation: Translation
    first_line: int
    name: str
    defines: tuple[str, ...]


@dataclass(frozen=True)
class StepPlace:
    """A schedule step: its number, the cell line of its statement and the statement."""

    index: int
    line: int
    source: str


@dataclass(frozen=True)
class ScheduleHistory:
    """The module a schedule started from and each step with the module after it."""

    initial: Any
    steps: tuple[tuple[StepPlace, Any], ...]


_cells: OrderedDict[str, _Cell] = OrderedDict()
#: Ordinary (course-mode) cells by their translated text: IPython names a cell's file only when
#: it compiles it, after the translation, so such a cell is found by the text its file holds.
_python_cells: OrderedDict[tuple[str, ...], tuple[Translation, str]] = OrderedDict()
_scheduled: OrderedDict[int, tuple[ScheduleHistory, int]] = OrderedDict()


def remember_cell(
    file_name: str,
    translation: Translation,
    first_line: int,
    name: str,
    defines: tuple[str, ...] = (),
) -> None:
    """Record a parsed cell registered under ``file_name`` (the name its spans carry)."""
    _cells[file_name] = _Cell(translation, first_line, name, tuple(defines))
    while len(_cells) > _MAX_CELLS:
        _cells.popitem(last=False)


def remember_python_cell(translation: Translation, name: str) -> None:
    """Record an ordinary code cell (course mode) before it runs, under its translated text."""
    key = tuple(translation.source.splitlines())
    _python_cells[key] = (translation, name)
    _python_cells.move_to_end(key)
    while len(_python_cells) > _MAX_CELLS:
        _python_cells.popitem(last=False)


def python_cell(file_name: str) -> tuple[Translation, int, str] | None:
    """``(translation, first line, cell name)`` of the cell compiled as ``file_name``: a parsed
    cell, or an ordinary cell found by the text IPython keeps for that file."""
    cell = _cells.get(file_name)
    if cell is None:
        text = "".join(linecache.getlines(file_name))
        found = _python_cells.get(tuple(text.splitlines())) if text else None
        if found is None:
            return None
        cell = _Cell(found[0], 1, found[1], ())
        _cells[file_name] = cell
        while len(_cells) > _MAX_CELLS:
            _cells.popitem(last=False)
    return cell.translation, cell.first_line, cell.name


def cell_place(span: Any) -> CellPlace | None:
    """The cell place of a TVM ``Span`` (``None`` when it is not from a remembered cell)."""
    source = getattr(span, "source_name", None)
    file_name = getattr(source, "name", None)
    if file_name is not None and str(file_name) not in _cells:
        python_cell(str(file_name))
    cell = _cells.get(str(file_name)) if file_name is not None else None
    if cell is None:
        return None
    line, column = int(span.line), int(span.column)
    return CellPlace(
        cell=cell.name,
        line=line + cell.first_line - 1,
        column=cell.translation.original_column(line, column),
        text=cell.translation.original_line(line),
        defines=cell.defines,
    )


def function_key(func: Any) -> int:
    """What identifies a function of a scheduled module: its body (its attributes may change)."""
    return structural_hash(func.body)


def remember_schedule(initial: Any, steps: list[tuple[StepPlace, Any]]) -> None:
    """Record a schedule run: the module it started from and each step with its module."""
    if not steps:
        return
    history = ScheduleHistory(initial, tuple(steps))
    for position, (_, mod) in enumerate(history.steps):
        for _, func in mod.functions_items():
            if hasattr(func, "body"):
                key = function_key(func)
                _scheduled[key] = (history, position)
                _scheduled.move_to_end(key)
    while len(_scheduled) > _MAX_SCHEDULED:
        _scheduled.popitem(last=False)


def schedule_history(func: Any) -> tuple[ScheduleHistory, int] | None:
    """The schedule run, and the position of its step, that produced ``func`` (a PrimFunc)."""
    return _scheduled.get(function_key(func))
