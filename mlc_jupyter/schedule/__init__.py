"""Schedule cells run step by step: recorded steps, IR diffs, loop trees, export.

Plain Python + TVM (no IPython, no widgets), so the trace replay widget and scripts can use it too:
``run_schedule_cell(code, mod, max_steps=k)`` replays the first k steps; ``changed_lines`` /
``unified_diff`` / ``side_by_side`` diff two IR texts.
"""

from __future__ import annotations

from .irdiff import changed_lines, side_by_side, unified_diff
from .looptree import loop_tree, loop_tree_text
from .session import PRIMITIVES, ScheduleSession, statement_for
from .steps import (
    ScheduleRun,
    ScheduleStep,
    export_steps,
    fresh_schedule,
    run_schedule_cell,
    short_schedule_error,
)

__all__ = [
    "PRIMITIVES",
    "ScheduleRun",
    "ScheduleSession",
    "ScheduleStep",
    "changed_lines",
    "export_steps",
    "fresh_schedule",
    "last_export",
    "loop_tree",
    "loop_tree_text",
    "run_schedule_cell",
    "set_last_export",
    "short_schedule_error",
    "side_by_side",
    "statement_for",
    "unified_diff",
]

_LAST_EXPORT: list[str] = [""]


def last_export() -> str:
    """Return the exported steps of the most recently used stepper ("" if none)."""
    return _LAST_EXPORT[0]


def set_last_export(code: str) -> None:
    """Remember ``code`` as the most recent export (called by steppers and the cell magic)."""
    _LAST_EXPORT[0] = code
