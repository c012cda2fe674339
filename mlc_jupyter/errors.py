"""Errors a user can meet, each rendered as a short message instead of a long traceback.

IPython calls ``_render_traceback_`` when an exception defines it, so a failing magic shows a
few lines: where (cell line and column), what, and what to do. ``str(error)`` starts with
``line L, column C:`` for cell errors; the lab extension reads that to mark the editor line.
"""

from __future__ import annotations


class MLCError(Exception):
    """Base class: an error with a short, actionable message and an optional hint."""

    hint: str = ""

    def __init__(self, message: str, *, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        if hint:
            self.hint = hint

    def render_lines(self) -> list[str]:
        """The lines shown to the user in place of a traceback."""
        lines = [f"{type(self).__name__}: {self}"]
        if self.hint:
            lines.append(f"hint: {self.hint}")
        return lines

    def _render_traceback_(self) -> list[str]:  # IPython's hook for custom tracebacks
        return self.render_lines()


class CellError(MLCError):
    """A mistake in the text of a cell, located at a line and column of the cell as typed.

    Lines count the magic line (``%%tir``) as line 1, as the editor shows them.
    """

    def __init__(
        self,
        message: str,
        *,
        line: int,
        column: int = 1,
        source_line: str = "",
        hint: str = "",
        cell_name: str = "cell",
        span: int = 1,
    ) -> None:
        self.line = line
        self.column = max(1, column)
        self.source_line = source_line
        self.cell_name = cell_name
        self.span = max(1, span)
        super().__init__(message, hint=hint)

    def __str__(self) -> str:
        return f"line {self.line}, column {self.column}: {self.message}"

    def render_lines(self) -> list[str]:
        lines = [f"{type(self).__name__}: {self}"]
        if self.source_line:
            gutter = f"{self.line:>4} | "
            lines.append(gutter + self.source_line.rstrip("\n"))
            lines.append(" " * (len(gutter) + self.column - 1) + "^" * self.span)
        if self.hint:
            lines.append(f"hint: {self.hint}")
        return lines


class TVMScriptError(CellError):
    """TVMScript (or Python) in a ``%%tir`` / ``%%relax`` cell that does not parse."""


class LoopExtentError(CellError):
    """A loop whose extent differs from the domain of the block iterator bound to it."""


class ScheduleStepError(CellError):
    """A schedule primitive that failed at a line of a ``%%mlc_schedule`` cell."""


class TargetError(MLCError):
    """A target that cannot be understood or used here."""


class BuildError(MLCError):
    """A module that does not build (or builds into something that cannot run)."""


class CallError(MLCError):
    """A built function called with arguments of the wrong number, shape or dtype."""


class NoGPUError(MLCError):
    """A GPU target used where no GPU is present."""


class TimingError(MLCError):
    """A timing request that cannot be carried out."""


class TuneError(MLCError):
    """A tuning run that cannot start or produced nothing usable."""


class TraceError(MLCError):
    """A trace or a sampling decision that cannot be replayed."""
