"""Messages from a widget's front end: whatever their handler raises is shown in the widget."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import MLCError, error_reason


def error_text(err: BaseException) -> str:
    """The one line a widget shows for ``err`` (an MLC error as written, others with their type)."""
    if isinstance(err, MLCError):
        return str(err) + (f" (hint: {err.hint})" if err.hint else "")
    return f"{type(err).__name__}: {error_reason(err)}"


def handle_showing_errors(widget: Any, handle: Callable[[], Any]) -> None:
    """Run a message handler; an exception sets ``widget.error`` instead of escaping.

    An exception raised in a comm message handler ends in the kernel's log, where nobody looks:
    the button would seem to do nothing. Here it shows in the widget, where the user clicked.
    """
    try:
        handle()
    except Exception as err:  # noqa: BLE001 - every failure is shown to the user, none dropped
        widget.error = error_text(err)
