"""Ordinary code cells in the course's spelling: translate them, and place their failures.

The IPython wiring is in :mod:`mlc_jupyter.magics.course`; this module is plain Python. A cell is
translated with the shared rule table (:func:`mlc_jupyter.dialect.translate`, shims on); a syntax
error is refused before the cell runs, located at the line and column the user typed. A course
spelling with no 0.27 equivalent (Relay) is left as typed: the cell runs up to it, as Python would
(its imports and definitions stay for the next cells), and the failure there becomes a
:class:`~mlc_jupyter.errors.GoneError` at that spelling that names the 0.27 way. A failure inside
TVM while the cell runs becomes a short :class:`~mlc_jupyter.errors.CellRaised` at the cell line
that called into TVM. A failure on one of
the printed book's known errata (:mod:`mlc_jupyter.errata`) says so and shows the corrected line.
"""

from __future__ import annotations

import ast
import traceback
from typing import Any

from ..dialect import Translation, translate
from ..errata import erratum_at
from ..errors import CellError, CellRaised, GoneError, MLCError, error_reason
from .parse import LOCATION, Locator, dataflow_leak

#: Files of the packages whose errors get the short message (their frames are not the user's).
_TVM_PARTS = ("/tvm/", "/tvm_ffi/", "/mlc_jupyter/")
_NO_GPU = ("Device API cuda is not enabled", "no CUDA-capable device", "CUDA_ERROR_NO_DEVICE")


def translate_cell(text: str) -> Translation:
    """Translate a cell for course mode; refuse what cannot run, located as typed.

    Spellings TVM 0.27 no longer has are left in place (``translation.gone``): the cell runs up
    to them and :func:`locate_failure` names the replacement where they fail.

    Raises
    ------
    TVMScriptError
        For a syntax error (a cell that IPython could not compile either).
    """
    translation = translate(text, shims=True)
    locate = Locator(translation, "<cell>", 1, "cell")
    try:
        compile(
            translation.source, "<cell>", "exec", ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
        )
    except SyntaxError as err:
        error = locate.syntax_error(err)
        erratum = erratum_at(text, error.line)
        if erratum is not None:
            error.hint = erratum.explain(text)
        raise error from None
    return translation


def from_tvm(tb: Any, filename: str) -> bool:
    """True when the failure happened inside TVM (or this package), below the cell's own code."""
    frames = traceback.extract_tb(tb)
    last_cell = max((i for i, f in enumerate(frames) if f.filename == filename), default=-1)
    below = frames[last_cell + 1 :]
    return any(any(part in f.filename for part in _TVM_PARTS) for f in below)


#: How IPython spells a magic line after its own transforms (``%mlc_build X``).
_MAGIC_CALL = "get_ipython().run_"


def locate_failure(err: BaseException, filename: str, translation: Translation) -> CellError | None:
    """The short located error for ``err`` raised by the cell compiled from ``filename``.

    ``None`` when the failure is the user's own Python (a ``NameError`` in the cell, an assert):
    those keep Python's traceback. TVM diagnostics (TVMScript in the cell), errors raised inside
    TVM and the project's own errors are placed at the cell line and column as typed.
    """
    if isinstance(err, CellError):
        return None  # already located (a magic's cell error)
    gone = gone_failure(err, filename, translation)
    if gone is not None:
        return gone
    text = str(err)
    locate = Locator(translation, filename, 1, "cell")
    located = locate.from_exception(err, "python")
    erratum = erratum_at(translation.original, located.line)
    if erratum is not None:  # the book's own mistake, typed as printed: say so, whatever failed
        return CellRaised(
            err.message if isinstance(err, MLCError) else error_reason(text, limit=None) or text,
            raised=_raised_name(err, text),
            line=located.line,
            column=located.column,
            source_line=located.source_line,
            hint=erratum.explain(translation.original),
            span=located.span,
        )
    tvm_failure = from_tvm(err.__traceback__, filename) or type(err).__module__.startswith("tvm")
    if not (tvm_failure or isinstance(err, MLCError)):
        return None
    found = LOCATION.search(text)
    if found and found.group("file") == filename:
        return located  # a TVMScript diagnostic in the cell: TVM's message, placed as typed
    if isinstance(err, MLCError) and located.source_line.lstrip().startswith(_MAGIC_CALL):
        return None  # a magic's own error renders itself (its location, source line and hint)
    if isinstance(err, MLCError):
        message, hint, raised = err.message, err.hint, type(err).__name__
    else:
        message = error_reason(text, limit=None) if text.strip() else type(err).__name__
        hint, raised = course_hint(text), _raised_name(err, text)
        if raised == "NoGPUError":
            message = "no GPU is present: TVM has no CUDA device to run this on"
    leak = dataflow_leak(text, translation.source)
    if leak is not None:  # TVM places this one at the decorator: point at the use instead
        line, column, span, hint = leak
        message = message.removeprefix("error: ")
        located = locate.error(message, line, column, span=span)
    return CellRaised(
        message,
        raised=raised,
        line=located.line,
        column=located.column,
        source_line=located.source_line,
        hint=hint,
        span=located.span,
    )


def gone_failure(err: BaseException, filename: str, translation: Translation) -> GoneError | None:
    """A :class:`GoneError` when ``err`` was raised by a cell line that uses a spelling TVM 0.27
    no longer has (``from tvm import relay`` fails with Python's ImportError there), at that
    spelling as typed; ``None`` otherwise."""
    lines = [f.lineno for f in traceback.extract_tb(err.__traceback__) if f.filename == filename]
    if not lines or not translation.gone:
        return None
    found = [g for g in translation.gone if g.line == lines[-1]]
    if not found:
        return None
    gone = found[0]
    return GoneError(
        f"{gone.text} is gone in TVM 0.27",
        line=gone.line,
        column=gone.column,
        source_line=translation.original_line(gone.line),
        hint=gone.rule.gone,
        span=len(gone.text),
    )


def _raised_name(err: BaseException, text: str) -> str:
    if any(marker in text for marker in _NO_GPU):
        return "NoGPUError"
    if "ScheduleError" in text or "Error message:" in text:
        return "ScheduleError"
    return type(err).__name__


def course_hint(text: str) -> str:
    """What to do about a TVM failure a learner meets while following the book."""
    if any(marker in text for marker in _NO_GPU):
        return (
            "this machine has no CUDA GPU: GPU code builds and can be read "
            "(rt_mod.imported_modules[0].get_source()) but cannot run here"
        )
    if "no longer exists" in text:
        return (
            "schedule steps are applied in place: a re-run repeats them on the already "
            "transformed schedule; re-run from the cell that creates sch"
        )
    if "Cannot find a block with the name" in text or "Cannot find global var" in text:
        return "check the block/function name against print(sch.mod.script())"
    if "not well-formed" in text:
        return "the module parses but is malformed; check block iterators and buffer accesses"
    return ""
