"""Who shows the progress of the course's tuning calls (``ms.tune_tir``, ``tune_relax``).

The notebook layer sets a view maker while course mode is on, so the book's tuning cells show
the same live progress as ``%mlc_tune``; a script sets none and tunes silently.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_make_view: Callable[[], Any] | None = None


def set_progress_view(make_view: Callable[[], Any] | None) -> None:
    """``make_view()`` gives a fresh view per tuning run: called with each progress event, and
    with ``task_started(index, total, task)`` for each kernel of a whole model."""
    global _make_view  # one shell's course mode sets it
    _make_view = make_view


def progress_view() -> Any:
    """A new view for one tuning run, or ``None`` when nobody shows progress."""
    return _make_view() if _make_view is not None else None
