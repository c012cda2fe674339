"""Errors a user can meet, each rendered as a short message instead of a long traceback.

IPython calls ``_render_traceback_`` when an exception defines it, so a failing magic shows a
few lines: where (cell line and column), what, and what to do. ``str(error)`` starts with
``line L, column C:`` for cell errors; the lab extension reads that to mark the editor line.
"""

from __future__ import annotations

import re
from typing import Any

#: Lines of an error's text that never say why it failed: traceback frames, IR comments, carets.
_NOISE = ("Traceback", "File ", "#", "^", "-->")
#: A line that names an exception, as the last line of a Python traceback does.
_EXCEPTION_LINE = re.compile(r"^(?:[\w.]+\.)?\w*(?:Error|Exception|Interrupt)\b:")
#: The prefix of a failed C++ check: ``Check failed: (x == y) is false: reason`` (TVM FFI) or
#: ``Check failed: x == y (3 vs. 4) : reason`` (older TVM logging).
_CHECK_FAILED = re.compile(r"^Check failed: (?:\(.*\) is false: |.*? : )")
#: The values a failed comparison saw, ``(5 vs. 3)`` in ``Check failed: a == b (5 vs. 3) : why``.
_CHECK_VALUES = re.compile(r"^Check failed: [^:]*?\(([^()]* vs\. [^()]*)\) : ")
#: Labels after which TVM names what failed on the next line (``Offending call:`` then the call).
_CONTEXT_LABELS = ("Offending call:",)
#: A failed check with no message of its own: ``Check failed: a == b (2 vs. 3) :``.
_BARE_CHECK = re.compile(r"^Check failed: (.*?)\s*:?$")
#: Where TVM prints an operator object whole (``ir.Op(span=None, ..., name="relax.add", ...)``).
_OP_REPR = "ir.Op("
_OP_NAME = re.compile(r'\bname="([^"]+)"')


def error_reason(err: BaseException | str, *, limit: int | None = 300) -> str:
    """The one line of an error that says why it failed, without the dumps around it.

    TVM puts the reason in different places: a schedule error dumps the whole IR and ends with
    ``Error message: why``; a text that holds a traceback ends with ``SomeError: why``; a C++
    check says ``Check failed: (cond) is false: why``, often under a line that only says who
    checked; other messages say why on their first line, and name what failed under a label
    (``Offending call:`` and the call), which is kept. An operator printed whole becomes its
    name. Every layer that shows an error in one line uses this function, so a better rule here
    improves every message. ``limit`` cuts the line (``None``: never).
    """
    text = str(err).strip()
    if not text:
        return type(err).__name__ if isinstance(err, BaseException) else "unknown error"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    marked = [line for line in lines if line.startswith("Error message:")]
    if marked:
        reason = marked[-1][len("Error message:") :].strip()
    elif any(line.startswith("Traceback") for line in lines):
        named = [line for line in lines if _EXCEPTION_LINE.match(line)]
        reason = named[-1] if named else lines[-1]
    elif any(line.startswith("Check failed:") for line in lines):
        reason = next(line for line in lines if line.startswith("Check failed:"))
    else:
        reason = next((line for line in lines if not line.startswith(_NOISE)), lines[0])
    reason = _continued(reason, lines)
    values = _CHECK_VALUES.match(reason)
    if values or _CHECK_FAILED.match(reason):
        reason = _CHECK_FAILED.sub("", reason) + (f" ({values.group(1)})" if values else "")
    else:
        reason = _BARE_CHECK.sub(r"\1", reason)
    reason = _short_operators(reason)
    for label in _CONTEXT_LABELS:
        if label in lines[:-1] and label not in reason:
            reason += f" ({label.rstrip(':').lower()}: {lines[lines.index(label) + 1]})"
    return reason if limit is None else reason[:limit]


def _continued(reason: str, lines: list[str], most: int = 2) -> str:
    """``reason`` with the lines it announces: TVM ends a line with ``when calling:`` and puts
    the call and what it expected on the next lines."""
    if not reason.endswith(":") or reason.startswith(_CONTEXT_LABELS) or reason not in lines:
        return reason
    after = lines[lines.index(reason) + 1 :][:most]
    return " ".join([reason, *(line for line in after if not line.startswith(_NOISE))])


def _short_operators(text: str) -> str:
    """``In ir.Op(span=None, ..., name="relax.multiply", ...), the ...`` -> ``In relax.multiply,
    the ...``: TVM prints an operator with its whole description, which buries the reason."""
    start = text.find(_OP_REPR)
    while start >= 0:
        depth, end = 0, len(text)
        for position in range(start + len(_OP_REPR) - 1, len(text)):
            depth += {"(": 1, ")": -1}.get(text[position], 0)
            if depth == 0:
                end = position + 1
                break
        name = _OP_NAME.search(text, start, end)
        text = text[:start] + (name.group(1) if name else "an operator") + text[end:]
        start = text.find(_OP_REPR, start + 1)
    return text


class InsecureRPCWarning(UserWarning):
    """TVM RPC has no authentication or encryption; said once per session, at the first use of a
    tracker or server. Silence it with ``warnings.filterwarnings("ignore",
    category=InsecureRPCWarning)`` once the devices are on a trusted network or behind a tunnel."""


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


class PassStepError(CellError):
    """A pass or rewrite that failed at a line of a ``%%mlc_passes`` cell (TVM's reason kept)."""


class TEScheduleError(MLCError):
    """A legacy TE schedule step (course mode) that TensorIR cannot take as written; the message
    names what to do instead."""


class TargetError(MLCError):
    """A target that cannot be understood or used here."""


class BuildError(MLCError):
    """A module that does not build (or builds into something that cannot run)."""


class KernelCompileError(BuildError):
    """A GPU kernel that the GPU compiler (nvcc, ptxas or NVRTC) rejects, located in its source.

    ``kernel`` is the CUDA kernel's name, ``cuda_line`` / ``cuda_text`` the line of the generated
    CUDA source the compiler names (``None`` / ``""`` for ptxas, which names only the kernel),
    ``words`` the identifiers the message quotes, ``cell`` a ``(label, line, text)`` of the
    notebook cell that wrote one of them, when it was found.
    """

    def __init__(
        self,
        message: str,
        *,
        kernel: str = "",
        cuda_line: int | None = None,
        cuda_text: str = "",
        words: tuple[str, ...] = (),
        cell: tuple[str, int, str] | None = None,
        hint: str = "",
    ) -> None:
        super().__init__(message, hint=hint)
        self.kernel = kernel
        self.cuda_line = cuda_line
        self.cuda_text = cuda_text
        self.words = words
        self.cell = cell

    def render_lines(self) -> list[str]:
        lines = [f"{type(self).__name__}: {self}"]
        if self.cuda_line is not None:
            lines.append(f"  CUDA line {self.cuda_line} | {self.cuda_text.strip()}")
        if self.cell is not None:
            label, line, text = self.cell
            lines.append(f"  {label}, line {line} | {text.strip()}")
        if self.hint:
            lines.append(f"hint: {self.hint}")
        return lines


class OutOfBoundsError(BuildError):
    """A kernel that indexes outside a buffer: refused before it runs, or stopped by a checked build.

    ``where`` holds the lines that locate it (the cell line with a caret, the schedule step).
    """

    def __init__(
        self, message: str, *, where: tuple[str, ...] | list[str] = (), hint: str = ""
    ) -> None:
        self.where = tuple(where)
        super().__init__(message, hint=hint)

    def render_lines(self) -> list[str]:
        lines = [f"{type(self).__name__}: {self}", *self.where]
        if self.hint:
            lines.append(f"hint: {self.hint}")
        return lines


class CallError(MLCError):
    """A built function called with arguments of the wrong number, shape or dtype."""


class KernelCrashError(MLCError):
    """A kernel of an isolated build that crashed its worker process (SIGSEGV, SIGBUS, an
    abort): the call fails, the notebook lives on, and the next call starts a fresh worker.

    ``function`` is the function called, ``signal`` the signal's name (``SIGSEGV``; empty when
    the worker exited instead), ``arguments`` what it was given (``A: float32[128, 128]``).
    """

    def __init__(
        self, message: str, *, function: str, signal: str, arguments: tuple[str, ...] = (),
        hint: str = "",
    ) -> None:  # fmt: skip
        self.function = function
        self.signal = signal
        self.arguments = tuple(arguments)
        super().__init__(message, hint=hint)


class NoGPUError(MLCError):
    """A GPU target used where no GPU is present."""


class TimingError(MLCError):
    """A timing request that cannot be carried out."""


class RemoteError(MLCError):
    """An RPC tracker, server or remote device that cannot be reached or used."""


class ModelImportError(MLCError):
    """A PyTorch model that cannot be captured or translated into Relax."""


class TuneError(MLCError):
    """A tuning run that cannot start or produced nothing usable."""


class TraceError(MLCError):
    """A trace or a sampling decision that cannot be replayed."""


class ForeignCodeError(MLCError):
    """A trace, tuning record or module from a file or a database that would put native code
    into a build (``pragma_import_llvm``, an annotation outside the allowlist, an extern call):
    refused before anything is built, since loading a library runs its code."""


class DeployError(MLCError):
    """A model that cannot leave the notebook as asked: not built, or a path that cannot be
    written (``%mlc_export``, the PyTorch module and ``torch.compile`` backend)."""


class CellRaised(CellError):  # noqa: N818 - named for what the cell did; the raised type leads
    """An ordinary code cell that failed inside TVM, shown at the cell line that raised.

    ``raised`` is the name of the original exception type (``ValueError``, ``ScheduleError``...);
    it leads the message in place of this class's name.
    """

    def __init__(self, message: str, *, raised: str, **kwargs: Any) -> None:
        self.raised = raised
        super().__init__(message, **kwargs)

    def render_lines(self) -> list[str]:
        lines = super().render_lines()
        lines[0] = f"{self.raised}: {self}"
        return lines


class GoneError(CellError):
    """A course spelling with no TVM 0.27 equivalent (the message says what to use instead)."""
