"""The names a plain cell gives schedule handles, in its functions too (the book writes its
schedules as functions: ``stochastic_schedule_mm``), for the traces to show."""

from __future__ import annotations

from typing import Any

from ..schedule.handle_names import remember_names


def name_handles(values: dict[str, Any]) -> None:
    """Course mode calls this after ``i, j, k = sch.get_loops(b)``: remember ``i``, ``j``, ``k``
    as the names of those handles (values that are not handles are ignored)."""
    remember_names(values)
