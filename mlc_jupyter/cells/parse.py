"""Cell text -> TVM objects, with every error placed at the line and column the user typed.

TVMScript decorators read their function's source through ``inspect``/``linecache``, so the cell is
registered in ``linecache`` under a fake file name and executed as a module of its own registered in
``sys.modules`` (the parser looks it up by ``__name__``). Nothing is written to the user's namespace
here: the caller binds ``ParsedCell.objects`` only after the whole cell has succeeded.
"""

from __future__ import annotations

import ast
import contextlib
import itertools
import linecache
import re
import sys
import time
import traceback
import types
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .. import origins, tvm_compat
from ..dialect import Translation, translate
from ..errors import CellError, TVMScriptError, error_reason
from .checks import check_loop_extents

_counter = itertools.count(1)
LOCATION = re.compile(r"-->\s*(?P<file><[^>]+>|[^\s:]+):(?P<line>\d+):(?P<col>\d+)")
_CARETS = re.compile(r"\^+")

KINDS = ("tir", "relax")


@dataclass(frozen=True)
class ParsedCell:
    """What a ``%%tir`` / ``%%relax`` cell defined.

    ``objects`` maps each top-level name the cell defined to its value (``IRModule``,
    ``PrimFunc``, Relax ``Function``, or a plain Python value); ``value`` is the last definition,
    the one a cell's ``_`` holds.
    """

    kind: str
    objects: dict[str, Any]
    source: str
    translated: str
    translations: tuple[str, ...] = ()
    parse_seconds: float = 0.0
    warnings: tuple[str, ...] = field(default=())

    @property
    def names(self) -> list[str]:
        return list(self.objects)

    @property
    def value(self) -> Any:
        return self.objects[self.names[-1]] if self.objects else None


@contextlib.contextmanager
def _well_formed_reasons() -> Iterator[list[str]]:
    """Record why TVMScript finds a Relax module not well-formed; its error says only that it is.

    The parser asks ``relax.analysis.check_well_formed``, the yes/no form of ``well_formed``, which
    raises with the reason (an operator's validation: the shapes or dtypes that disagree). While
    this is active the yes/no form is answered by ``well_formed`` and each reason is appended to
    the yielded list.
    """
    analysis = tvm_compat.tvm().relax.analysis
    original = analysis.check_well_formed
    reasons: list[str] = []

    def check_well_formed(obj: Any, check_ty: bool = True) -> bool:
        try:
            analysis.well_formed(obj, check_ty)
        except Exception as err:  # noqa: BLE001 - the reason is the point
            reasons.append(str(err))
            return False
        return True

    analysis.check_well_formed = check_well_formed
    try:
        yield reasons
    finally:
        analysis.check_well_formed = original


def parse_script(
    source: str,
    namespace: dict[str, Any] | None = None,
    *,
    kind: str = "tir",
    first_line: int = 2,
    cell_name: str = "cell",
) -> ParsedCell:
    """Parse a cell of TVMScript (course or TVM 0.27 spelling) into TVM objects.

    Parameters
    ----------
    source
        The cell body: ``@I.ir_module`` classes, ``@T.prim_func`` / ``@R.function`` functions,
        imports and plain Python statements.
    namespace
        Names the script may use (the notebook's namespace); it is read, never written.
    kind
        ``"tir"`` or ``"relax"``; only used in messages.
    first_line
        The cell line of ``source``'s first line (2 when a ``%%tir`` line precedes it).

    Raises
    ------
    TVMScriptError
        For a syntax, name, type or well-formedness error, located in the cell as typed.
    LoopExtentError
        For a loop whose extent differs from the block iterator's domain (the book's check).
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, not {kind!r}")
    started = time.perf_counter()
    translation = translate(source)
    number = next(_counter)
    filename = f"<mlc-cell-{number}>"
    located = Locator(translation, filename, first_line, cell_name)

    try:
        code = compile(translation.source, filename, "exec", dont_inherit=True)
        tree = ast.parse(translation.source, filename)
    except SyntaxError as err:
        raise located.syntax_error(err) from None

    module = _cell_module(number, namespace)
    linecache.cache[filename] = (
        len(translation.source),
        None,
        translation.source.splitlines(True),
        filename,
    )
    try:
        with (
            warnings.catch_warnings(record=True) as caught,
            _well_formed_reasons() as why,
        ):
            warnings.simplefilter("always")
            exec(code, module.__dict__)  # noqa: S102 - running the user's own cell is the point
    except BaseException as err:  # every failure is reported at its cell line
        if isinstance(err, KeyboardInterrupt):
            raise
        raise located.from_exception(err, kind, why) from None
    finally:
        sys.modules.pop(module.__name__, None)

    names = _defined_names(tree)
    objects = {name: module.__dict__[name] for name in names if name in module.__dict__}
    for name, obj in objects.items():
        check_loop_extents(obj, name, located)
    origins.remember_cell(filename, translation, first_line, cell_name, tuple(objects))
    messages = tuple(
        dict.fromkeys(str(w.message) for w in caught if not _is_known_deprecation(w.message))
    )
    return ParsedCell(
        kind=kind,
        objects=objects,
        source=source,
        translated=translation.source,
        translations=translation.applied,
        parse_seconds=time.perf_counter() - started,
        warnings=messages,
    )


def _cell_module(number: int, namespace: dict[str, Any] | None) -> types.ModuleType:
    module = types.ModuleType(f"__mlc_cell_{number}__")
    scope = module.__dict__
    if namespace:
        scope.update({k: v for k, v in namespace.items() if not k.startswith("__")})
    scope.update(tvm_compat.script_namespaces())
    scope["__name__"] = module.__name__
    sys.modules[module.__name__] = module
    return module


def _defined_names(tree: ast.Module) -> list[str]:
    """Top-level names a cell defines: classes, functions and simple assignments, in order."""
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names.extend(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign | ast.AugAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
    return list(dict.fromkeys(names))


def _is_known_deprecation(message: Warning | str) -> bool:
    return "is deprecated" in str(message)


class Locator:
    """Turns positions in the translated text into errors at the cell's own line and column."""

    def __init__(
        self, translation: Translation, filename: str, first_line: int, cell_name: str
    ) -> None:
        self.translation = translation
        self.filename = filename
        self.first_line = first_line
        self.cell_name = cell_name

    def error(
        self,
        message: str,
        line: int,
        column: int,
        *,
        hint: str = "",
        span: int = 1,
        cls: type[CellError] = TVMScriptError,
    ) -> CellError:
        """An error at ``line``/``column`` of the translated source (1-based)."""
        col = self.translation.original_column(line, column)
        end = self.translation.original_column(line, column + span)
        span = max(1, end - col) if end > col else span
        return cls(
            message,
            line=line + self.first_line - 1,
            column=col,
            source_line=self.translation.original_line(line),
            hint=hint,
            cell_name=self.cell_name,
            span=span,
        )

    def syntax_error(self, err: SyntaxError) -> CellError:
        """Python's own syntax error, at the cell's line and column."""
        return self.error(
            f"invalid syntax: {err.msg}",
            err.lineno or 1,
            err.offset or 1,
            hint="fix the Python syntax on this line",
        )

    def from_exception(
        self, err: BaseException, kind: str, well_formed: list[str] | None = None
    ) -> CellError:
        """Locate a failure raised while the cell ran (TVM diagnostics or Python errors).

        ``well_formed`` holds the reasons TVM gave for a module it found not well-formed (its
        diagnostic says only that it is not).
        """
        text = str(err)
        found = LOCATION.search(text)
        if found and found.group("file") == self.filename:
            message = text.split("\n", 1)[0].removeprefix("error: ").strip()
            if message.startswith(_NOT_WELL_FORMED):
                message = _not_well_formed(text[: found.start()], well_formed or [])
            tail = text[found.end() :].rstrip().splitlines()
            carets = _CARETS.search(tail[-1]) if tail else None
            span = len(carets.group(0)) if carets else 1
            line, column = int(found.group("line")), int(found.group("col"))
            column, span = _narrow_to_name(message, self.translation, line, column, span)
            hint = _hint_for(message, kind)
            leak = dataflow_leak(message, self.translation.source, self.first_line)
            if leak is not None:
                line, column, span, hint = leak
            return self.error(_reason(message), line, column, hint=hint, span=span)
        frame = _last_cell_frame(err, self.filename)
        message = f"{type(err).__name__}: {_reason(text)}" if text else type(err).__name__
        if frame is None:
            return self.error(message, 1, 1, hint=_hint_for(text, kind))
        line, column, span = frame
        return self.error(message, line, column, hint=_hint_for(text, kind), span=span)


def _last_cell_frame(err: BaseException, filename: str) -> tuple[int, int, int] | None:
    frames = [f for f in traceback.extract_tb(err.__traceback__) if f.filename == filename]
    if not frames:
        return None
    frame = frames[-1]
    column = (getattr(frame, "colno", None) or 0) + 1
    end = getattr(frame, "end_colno", None)
    span = (end + 1 - column) if end and frame.lineno == getattr(frame, "end_lineno", None) else 1
    return frame.lineno or 1, column, max(1, span)


def _narrow_to_name(
    message: str, translation: Translation, line: int, column: int, span: int
) -> tuple[int, int]:
    """Point an "Undefined variable: x" caret at ``x`` itself rather than the whole expression."""
    name = re.search(r"Undefined variable: (\w+)", message)
    text = translation.source.splitlines()[line - 1] if name else ""
    if name:
        found = re.compile(r"\b" + re.escape(name.group(1)) + r"\b").search(text, column - 1)
        if found and found.start() < column - 1 + span:
            return found.start() + 1, len(name.group(1))
    return column, span


def dataflow_leak(
    message: str, source: str, first_line: int = 1
) -> tuple[int, int, int, str] | None:
    """An "Undefined variable: x" whose ``x`` is bound inside a ``with R.dataflow()`` block but
    not passed to its ``R.output``: the first use after the block, and what to do about it."""
    found = re.search(r"Undefined variable: (\w+)", message)
    try:
        tree = ast.parse(source) if found else None
    except SyntaxError:
        return None
    name = found.group(1) if found else ""
    for block in _dataflow_blocks(tree):
        inside = [node for statement in block.body for node in ast.walk(statement)]
        outputs = [c for c in inside if isinstance(c, ast.Call) and _attr_name(c.func) == "output"]
        bound = {n.id for n in inside if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        passed = {a.id for c in outputs for a in c.args if isinstance(a, ast.Name)}
        uses = sorted(
            (n.lineno, n.col_offset)
            for n in ast.walk(tree)
            if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)
            and n.lineno > (block.end_lineno or block.lineno)
        )  # fmt: skip
        if name in bound and name not in passed and uses:
            what = (
                "list it in the block's R.output(...)"
                if outputs
                else f"end the block with R.output({name})"
            )
            hint = (
                f"{name} is bound inside the dataflow block of line {block.lineno + first_line - 1}; "
                f"only the names passed to R.output are visible after the block: {what}"
            )
            return uses[0][0], uses[0][1] + 1, len(name), hint
    return None


def _dataflow_blocks(tree: ast.AST | None) -> list[ast.With]:
    """The ``with R.dataflow():`` statements of ``tree`` (none without a tree)."""
    nodes = ast.walk(tree) if tree is not None else ()
    return [n for n in nodes if isinstance(n, ast.With) and any(_is_dataflow(i) for i in n.items)]


def _is_dataflow(item: ast.withitem) -> bool:
    return (
        isinstance(item.context_expr, ast.Call) and _attr_name(item.context_expr.func) == "dataflow"
    )


def _attr_name(func: ast.expr) -> str:
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


#: How TVMScript's diagnostic for a module that is not well-formed starts.
_NOT_WELL_FORMED = "Program is not well-formed"


def _not_well_formed(text: str, reasons: list[str]) -> str:
    """``not well-formed: why`` from the reason after ``Traceback:`` (TensorIR) or recorded."""
    _, _, after = text.partition("Traceback:")
    why = after.strip() or (reasons[-1] if reasons else "")
    why = error_reason(why, limit=None).removeprefix("Well-formedness check failed: ")
    return f"the module is not well-formed: {why}" if why else f"{_NOT_WELL_FORMED}"


def _reason(message: str) -> str:
    return error_reason(message, limit=None) if message.strip() else message


def _hint_for(message: str, kind: str) -> str:
    if "expects the first argument to be a GlobalVar" in message:
        return "inside an @I.ir_module class, name the function as cls.f or ModuleName.f"
    if "Undefined variable" in message and kind == "relax":
        return (
            "define the name earlier; inside an @I.ir_module class refer to its functions as "
            "cls.f or ModuleName.f"
        )
    if "Undefined variable" in message or "is not defined" in message:
        return "define the name earlier in the cell or in a previous cell (the notebook's names are visible)"
    tir = tvm_compat.TIR_SCRIPT_NAMESPACE
    if "has no attribute" in message and (tir in message or "relax" in message):
        dialect = f"T ({tir})" if tir in message else "R (relax)"
        return f"this name does not exist in {dialect}; check the spelling against TVMScript"
    if "Too many indices" in message or "shape" in message.lower():
        return "check the buffer's declared shape against how it is indexed"
    if "not well-formed" in message:
        return "the module parses but is malformed; check block iterators and buffer accesses"
    return f"fix the TVMScript on this line; the cell was not bound (%%{kind})"
