"""The MLC course's TVM spelling -> TVM 0.27's spelling, for the text of a cell.

One rule table, :data:`RULES`, serves the ``%%tir`` / ``%%relax`` / ``%%mlc_schedule`` magics and,
in course mode, every ordinary code cell (:mod:`mlc_jupyter.magics.course`). Rules rewrite code
only: a string or comment that mentions an old name stays as typed, except the rules that are
about a string (the ``"tir.noalias"`` key). Every rewrite stays on its own line, so line numbers
never move; where a line changes length the edit is recorded, so a column TVM or Python reports
in the translated text maps back to the column the user typed
(:meth:`Translation.original_column`).

A rule has a plain 0.27 rewrite (``modern``) and, for ordinary Python cells, may route the name to
a course shim instead (``shim``, a name of :mod:`mlc_jupyter.course`, reached as ``mlc_course``)
where the old *behaviour* is gone too (``tvm.build`` results with ``time_evaluator``, tuning that
returns what the book expects). A ``gone`` rule has no replacement: in a Python cell the spelling is
left as typed, and where it fails the error names the 0.27 way to do it. The README's table is :func:`table_markdown` (``python -m mlc_jupyter.dialect``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from .textedit import LineEdits, Span, in_code, is_whole_string, literal_spans

#: The name under which ordinary cells reach the course shims (the package mlc_jupyter.course).
COURSE_NAME = "mlc_course"

Replacement = str | Callable[[re.Match[str]], str] | None


@dataclass(frozen=True)
class Rule:
    """One rewrite: the course spelling, the 0.27 spelling, why, and how to find and rewrite it.

    ``replace`` is the 0.27 rewrite (``None``: the name still exists, left alone in magic cells);
    ``shim`` the rewrite in ordinary Python cells when it differs; ``where`` is ``"code"`` or
    ``"string"`` (then only a whole string literal matches); ``line_if`` restricts the rule to
    lines that match it; ``cell_if`` to cells whose code matches it; ``gone`` is the hint of a
    spelling with no 0.27 equivalent.
    """

    course: str
    modern: str
    why: str
    pattern: re.Pattern[str]
    replace: Replacement = None
    shim: Replacement = None
    where: str = "code"
    line_if: re.Pattern[str] | None = None
    cell_if: re.Pattern[str] | None = None
    gone: str = ""
    shim_text: str = ""
    scope: str = ""

    def rewrite(self, match: re.Match[str], shims: bool) -> str | None:
        """The replacement text of ``match`` (``None``: leave it)."""
        how = self.shim if shims and self.shim is not None else self.replace
        if how is None:
            return None
        return how(match) if callable(how) else match.expand(how)


def _script_import_name(m: re.Match[str]) -> str:
    return "tirx"


def _prim_func_decorator(m: re.Match[str]) -> str:
    args = m.group(2)
    if args is None:
        return f"{m.group(1)}(s_tir=True)"
    if "s_tir" in args:
        return m.group(0)
    inner = args[1:-1].strip()
    return f"{m.group(1)}(s_tir=True{', ' + inner if inner else ''})"


def _tuning_import(prefix: str) -> Callable[[re.Match[str]], str]:
    def rewrite(m: re.Match[str]) -> str:
        alias = m.group(2) or " as meta_schedule"
        return f"{m.group(1)}{prefix}{alias}"

    return rewrite


C = COURSE_NAME

RULES: tuple[Rule, ...] = (
    Rule(
        "from tvm.script import tir as T",
        "from tvm.script import tirx as T",
        "the TIR dialect module was renamed",
        re.compile(r"\btir\b(?!x)"),
        _script_import_name,
        line_if=re.compile(r"^\s*from\s+tvm\.script\s+import\b"),
    ),
    Rule(
        "@T.prim_func / @T.prim_func(private=True)",
        "@T.prim_func(s_tir=True) / @T.prim_func(s_tir=True, private=True)",
        "functions with blocks must say s_tir=True; TVM reads it from the decorator's text",
        re.compile(r"(@\s*T\.prim_func)(\([^()]*\))?(?=\s*(#.*)?$)"),
        _prim_func_decorator,
    ),
    Rule(
        "Y = T.alloc_buffer(...) at the top of a course @T.prim_func",
        "Y = T.sblock_alloc_buffer(...)",
        "the course's function-level buffer belongs to the root block; 0.27 reads T.alloc_buffer "
        "as a statement-level allocation, which schedules then treat as an output "
        "(cache_write + reverse_compute_inline fail)",
        re.compile(r"\bT\.alloc_buffer(\s*\()"),
        r"T.sblock_alloc_buffer\1",
        scope="course function",
    ),
    Rule(
        'with T.block("Y"):',
        'with T.sblock("Y"):',
        "blocks are called sblocks",
        re.compile(r"\bT\.block\s*\("),
        "T.sblock(",
    ),
    Rule(
        "T.block_attr({...})",
        "T.sblock_attr({...})",
        "blocks are called sblocks",
        re.compile(r"\bT\.block_attr\s*\("),
        "T.sblock_attr(",
    ),
    Rule(
        '"tir.noalias": True',
        '"tirx.noalias": True',
        'trap: "tir.noalias" is silently ignored, so LLVM loses noalias and the book\'s '
        "schedules run 2-5x slower",
        re.compile(r"""(["'])tir\.noalias\1"""),
        r"\1tirx.noalias\1",
        where="string",
    ),
    Rule(
        'T.func_attr({"tir.noalias": T.bool(True)})',
        'T.func_attr({"tirx.noalias": True})',
        "older TVMs printed function attributes as T.bool(True); 0.27 parses it but cannot build "
        'it ("Cannot convert from type ir.IntImm to int")',
        re.compile(r"\bT\.bool\(\s*(True|False)\s*\)"),
        r"\1",
        line_if=re.compile(r"\bT\.func_attr\s*\("),
    ),
    Rule(
        "R.call_tir(f, args, out_sinfo=...)",
        "R.call_tir(f, args, out_ty=...)",
        "the keyword was renamed (also for R.call_dps_packed)",
        re.compile(r"\bout_sinfo(\s*=)"),
        r"out_ty\1",
    ),
    Rule(
        "tvm.tir.Schedule(mod)",
        "tvm.s_tir.Schedule(mod)",
        "schedules moved to tvm.s_tir",
        re.compile(r"(?<![\w.])tvm\.tir\.Schedule\b"),
        "tvm.s_tir.Schedule",
    ),
    Rule(
        "tvm.tir.TensorIntrin.register(name, desc, impl)",
        "tvm.s_tir.TensorIntrin.register(name, desc, impl)",
        "tensor intrinsics moved to tvm.s_tir; in a Python cell a re-run replaces the intrinsic "
        "(TVM refuses a second registration)",
        re.compile(r"(?<![\w.])tvm\.tir\.TensorIntrin\b"),
        "tvm.s_tir.TensorIntrin",
        shim=f"{C}.TensorIntrin",
    ),
    Rule(
        "tvm.tir.<name>",
        "tvm.tirx.<name>",
        "the TIR namespace was renamed; in a Python cell the course's tvm.tir also finds the "
        "names that moved to tvm.s_tir (BlockRV, LoopRV, ...)",
        re.compile(r"(?<![\w.])tvm\.tir\b(?!x)"),
        "tvm.tirx",
        shim=f"{C}.tir",
    ),
    Rule(
        "from tvm import tir",
        "from tvm import tirx as tir",
        "the TIR namespace was renamed (tir.Schedule then needs the course's tir in a Python cell)",
        re.compile(r"^(\s*)from\s+tvm\s+import\s+tir\b(?!x)(\s+as\s+\w+)?"),
        lambda m: f"{m.group(1)}from tvm import tirx as {(m.group(2) or ' as tir').split()[-1]}",
        shim=lambda m: f"{m.group(1)}from mlc_jupyter.course import tir{m.group(2) or ''}",
    ),
    Rule(
        "from tvm import meta_schedule as ms",
        "from tvm.s_tir import meta_schedule as ms",
        "MetaSchedule moved to tvm.s_tir; in a Python cell ms.tune_tir runs the project's tuner and "
        "ms.tir_integration.compile_tir accepts the IRModule the book passes",
        re.compile(r"^(\s*)from\s+tvm\s+import\s+meta_schedule\b(\s+as\s+\w+)?"),
        _tuning_import("from tvm.s_tir import meta_schedule"),
        shim=_tuning_import("from mlc_jupyter.course import tuning"),
    ),
    Rule(
        "tvm.meta_schedule",
        "tvm.s_tir.meta_schedule",
        "MetaSchedule moved to tvm.s_tir",
        re.compile(r"(?<![\w.])tvm\.meta_schedule\b"),
        "tvm.s_tir.meta_schedule",
        shim=f"{C}.tuning",
    ),
    Rule(
        "sch.get_block(name)",
        "sch.get_sblock(name)",
        "blocks are called sblocks",
        re.compile(r"\.get_block\s*\("),
        ".get_sblock(",
    ),
    Rule(
        "tvm.nd.array(x[, dev]) / tvm.nd.empty(shape[, dtype, dev])",
        "tvm.runtime.tensor(x, device=dev) / tvm.runtime.empty(shape, dtype, device=dev)",
        "tvm.nd is gone; in a Python cell a GPU device without a GPU says so plainly",
        re.compile(r"(?<![\w.])tvm\.nd\.(array|empty)\b"),
        lambda m: "tvm.runtime." + ("tensor" if m.group(1) == "array" else "empty"),
        shim=rf"{C}.nd.\1",
    ),
    Rule(
        "tvm.nd.NDArray",
        "tvm.runtime.Tensor",
        "tvm.nd is gone",
        re.compile(r"(?<![\w.])tvm\.nd\.NDArray\b"),
        "tvm.runtime.Tensor",
    ),
    Rule(
        "t.asnumpy()",
        "t.numpy()",
        "asnumpy (deprecated since TVM 0.8, the same copy to NumPy) is gone; only in cells that "
        "use tvm",
        re.compile(r"\.asnumpy(\s*\()"),
        r".numpy\1",
        cell_if=re.compile(r"\btvm\b"),
    ),
    Rule(
        "tvm.build(mod, target)",
        "tvm.compile(mod, target)",
        "tvm.build is deprecated and builds TensorIR only; in a Python cell it builds through "
        "the project (cached, checked) and returns a module that also has the book's "
        "time_evaluator, imported_modules[0].get_source() and rt_lib['name']",
        re.compile(r"(?<![\w.])tvm\.build\b"),
        None,
        shim=f"{C}.build",
    ),
    Rule(
        "s = te.create_schedule([C.op]); s[C].split(x, factor=4)",
        "sch = tvm.s_tir.Schedule(te.create_prim_func([A, B, C])); sch.split(loop, [None, 4])",
        "TE schedules were removed in TVM 0.27; in a Python cell the course's TE schedule drives "
        "a TensorIR schedule of te.create_prim_func's function: stages are its blocks, op.axis "
        "its loops, each primitive the TensorIR one (%mlc_trace s shows the steps)",
        re.compile(r"(?<![\w.])(?:tvm\.)?te\.create_schedule\b"),
        None,
        shim=f"{C}.create_schedule",
    ),
    Rule(
        "te.Schedule",
        "tvm.s_tir.Schedule",
        "the TE schedule class, in a Python cell the course's (an annotation such as "
        "s: te.Schedule = ...)",
        re.compile(r"(?<![\w.])(?:tvm\.)?te\.Schedule\b"),
        None,
        shim=f"{C}.TESchedule",
    ),
    Rule(
        "tvm.lower(s, [A, B, C])",
        "te.create_prim_func([A, B, C]) (then schedule it)",
        "tvm.lower is gone; in a Python cell it gives the TE schedule's TensorIR function taking "
        "those tensors (the others it computes become its buffers), as an IRModule",
        re.compile(r"(?<![\w.])tvm\.lower\b"),
        None,
        shim=f"{C}.lower",
    ),
    Rule(
        'relax.build(mod, target="llvm")',
        'relax.build(mod, target="llvm")',
        "unchanged in 0.27; in a Python cell it builds through the project like tvm.build "
        "(cached, bounds-checked before it runs, %mlc_checked) and returns 0.27's Executable",
        re.compile(r"(?<![\w.])(?:tvm\.)?relax\.build\b"),
        None,
        shim=f"{C}.relax_build",
    ),
    Rule(
        'tvm.register_func("env.f", override=True)',
        'tvm.register_global_func("env.f", override=True)',
        "renamed; in a Python cell a re-run always replaces the earlier registration",
        re.compile(r"(?<![\w.])tvm\.register_func\b"),
        "tvm.register_global_func",
        shim=f"{C}.register_func",
    ),
    Rule(
        'relax.TensorStructInfo((128, 128), "float32")',
        'relax.TensorType((128, 128), "float32")',
        "struct info is called type",
        re.compile(r"(?<![\w])relax\.TensorStructInfo\b"),
        "relax.TensorType",
    ),
    Rule(
        "var.struct_info.shape",
        "var.ty.shape",
        "struct info is called type",
        re.compile(r"\.struct_info\b"),
        ".ty",
    ),
    Rule(
        "relax.const(value, relax.TensorStructInfo(shape, dtype))",
        "relax.const(value, dtype)",
        "the second argument is a dtype now; in a Python cell that uses TensorStructInfo, "
        "relax.const also accepts a tensor type",
        re.compile(r"(?<![\w.])relax\.const\b"),
        None,
        shim=f"{C}.relax_const",
        cell_if=re.compile(r"\bTensorStructInfo\b"),
    ),
    Rule(
        "from tvm.contrib import utils, clang",
        "from tvm.support import utils, clang",
        "moved to tvm.support; clang needs a clang binary, so in a Python cell "
        "clang.create_llvm compiles the C code with the C compiler present (gcc) and loads it",
        re.compile(r"(?<=from )tvm\.contrib\b"),
        "tvm.support",
        shim="mlc_jupyter.course.contrib",
        line_if=re.compile(r"^\s*from\s+tvm\.contrib\s+import\s+(utils|clang)\b"),
    ),
    Rule(
        "tvm.contrib.clang / tvm.contrib.utils",
        "tvm.support.clang / tvm.support.utils",
        "moved to tvm.support (clang: see above)",
        re.compile(r"(?<![\w.])tvm\.contrib\.(clang|utils)\b"),
        r"tvm.support.\1",
        shim=rf"{C}.contrib.\1",
    ),
    Rule(
        "tvm.ir.structural_equal(a, b)",
        "tvm_ffi.structural_equal(a, b)",
        "moved to tvm_ffi",
        re.compile(r"(?<![\w.])tvm\.ir\.structural_(equal|hash)\b"),
        None,
        shim=rf"{C}.structural_\1",
    ),
    Rule(
        "from tvm import relay / tvm.relay",
        "-",
        "Relay is gone",
        re.compile(r"(?<![\w.])tvm\.relay\b|^\s*from\s+tvm\s+import\s+relay\b"),
        gone="Relay was removed in TVM 0.27: import models with tvm.relax.frontend "
        "(from_fx, from_exported_program), build with tvm.compile, run with relax.VirtualMachine",
    ),
    Rule(
        "tvm.autotvm / tvm.auto_scheduler",
        "-",
        "AutoTVM and Ansor are gone",
        re.compile(
            r"(?<![\w.])tvm\.(autotvm|auto_scheduler)\b|^\s*from\s+tvm\s+import\s+"
            r"(autotvm|auto_scheduler)\b"
        ),
        gone="AutoTVM and the auto-scheduler were removed in TVM 0.27: tune with MetaSchedule "
        "(ms.tune_tir, or %mlc_tune)",
    ),
    Rule(
        "tvm.contrib.graph_executor",
        "-",
        "the graph executor is gone",
        re.compile(r"(?<![\w.])tvm\.contrib\.graph_executor\b|graph_executor\.GraphModule\b"),
        gone="the graph executor was removed in TVM 0.27: build with tvm.compile and run with "
        "relax.VirtualMachine(ex, dev)",
    ),
)


@dataclass(frozen=True)
class Gone:
    """A spelling with no TVM 0.27 equivalent, found at 1-based ``line``/``column``."""

    line: int
    column: int
    text: str
    rule: Rule


@dataclass
class Translation:
    """The translated source and what is needed to map positions back to the original."""

    original: str
    source: str
    edits: dict[int, LineEdits] = field(default_factory=dict)
    applied: tuple[str, ...] = ()
    gone: tuple[Gone, ...] = ()

    @property
    def changed(self) -> bool:
        return self.source != self.original

    def original_column(self, line: int, column: int) -> int:
        """Map a 1-based ``column`` on 1-based ``line`` of :attr:`source` to the original text."""
        edits = self.edits.get(line)
        return (edits.to_old(column - 1) if edits else column - 1) + 1

    def original_line(self, line: int) -> str:
        """The text of 1-based ``line`` as the user typed it."""
        lines = self.original.splitlines()
        return lines[line - 1] if 0 < line <= len(lines) else ""

    def changed_lines(self) -> list[tuple[int, str, str]]:
        """``(line, as typed, as run)`` for every line the translation rewrote."""
        old, new = self.original.split("\n"), self.source.split("\n")
        return [(n, a, b) for n, (a, b) in enumerate(zip(old, new, strict=False), 1) if a != b]


#: The renames of :data:`RULES` the other way, for display only: TVM 0.27's printed TVMScript
#: and traces in the course's spelling (``T.block`` for ``T.sblock``), never executed.
COURSE_DISPLAY: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\bT\.sblock_alloc_buffer(\s*\()"), r"T.alloc_buffer\1"),
    (re.compile(r"\bT\.sblock_attr(\s*\()"), r"T.block_attr\1"),
    (re.compile(r"\bT\.sblock(\s*\()"), r"T.block\1"),
    (re.compile(r"\.get_sblock(\s*\()"), r".get_block\1"),
    (re.compile(r"(@\s*T\.prim_func)\(s_tir=True\)"), r"\1"),
    (re.compile(r"(@\s*T\.prim_func\()s_tir=True, "), r"\1"),
    (re.compile(r'"tirx\.noalias"'), '"tir.noalias"'),
    (re.compile(r"^(\s*#?\s*from tvm\.script import )tirx( as T)", re.M), r"\1tir\2"),
    # the import hint 0.27 prints above every module; the book's printed IR has none
    (re.compile(r"^#\s*from tvm\.tirx\.layout import Axis\n", re.M), ""),
)


def course_spelling(text: str) -> str:
    """``text`` (IR or a trace as TVM 0.27 prints it) in the course's spelling, for display."""
    for pattern, course in COURSE_DISPLAY:
        text = pattern.sub(course, text)
    return text


def translate(source: str, *, shims: bool = False) -> Translation:
    """Rewrite the course's spelling in ``source`` to TVM 0.27's, keeping every line in place.

    ``shims=True`` (ordinary Python cells) routes names whose old behaviour is gone to the course
    shims (``mlc_course.*``). The modern spelling passes through unchanged, so cells may mix both;
    text without any course spelling comes back identical.
    """
    spans = literal_spans(source)
    code_text = _code_only(source, spans)
    out_lines: list[str] = []
    edits: dict[int, LineEdits] = {}
    applied: list[str] = []
    gone: list[Gone] = []
    rules = [r for r in RULES if r.cell_if is None or r.cell_if.search(code_text)]
    top_level = _course_function_top_lines(code_text.split("\n"))
    for number, line in enumerate(source.split("\n"), start=1):
        line_spans = spans.get(number, [])
        if not line.strip():
            out_lines.append(line)
            continue
        line_edits = LineEdits()
        here = [r for r in rules if not r.scope or number in top_level]
        new_line = _rewrite_line(line, line_spans, here, shims, line_edits, applied)
        for rule in rules:
            if rule.gone:
                gone.extend(_gone_in(line, line_spans, rule, number))
        if line_edits.edits:
            edits[number] = line_edits
        out_lines.append(new_line)
    return Translation(
        source, "\n".join(out_lines), edits, tuple(dict.fromkeys(applied)), tuple(gone)
    )


_BARE_PRIM_FUNC = re.compile(r"^(\s*)@\s*T\.prim_func\s*(\((?![^)]*s_tir)[^()]*\))?\s*$")


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip())


def _course_function_top_lines(code: list[str]) -> set[int]:
    """1-based lines at the top level of functions decorated with a course ``@T.prim_func``.

    ``code`` is the cell with strings and comments blanked. The header of the ``def`` may span
    several lines; the body's top level is the indentation of its first statement.
    """
    found: set[int] = set()
    n, i = len(code), 0
    while i < n:
        decorator = _BARE_PRIM_FUNC.match(code[i])
        i += 1
        if decorator is None:
            continue
        outer = len(decorator.group(1))
        while i < n and (not code[i].strip() or code[i].lstrip().startswith("@")):
            i += 1
        if i >= n or not code[i].lstrip().startswith("def ") or _indent(code[i]) != outer:
            continue
        depth = 0
        while i < n:
            depth += sum(code[i].count(c) for c in "([{") - sum(code[i].count(c) for c in ")]}")
            i += 1
            if depth <= 0 and code[i - 1].rstrip().endswith(":"):
                break
        body: int | None = None
        while i < n:
            if code[i].strip():
                if _indent(code[i]) <= outer:
                    break
                body = _indent(code[i]) if body is None else body
                if _indent(code[i]) == body:
                    found.add(i + 1)
            i += 1
    return found


def _code_only(source: str, spans: dict[int, list[Span]]) -> str:
    """``source`` with strings and comments blanked out (for the ``cell_if`` conditions)."""
    lines = source.split("\n")
    for number, line_spans in spans.items():
        text = lines[number - 1]
        for span in line_spans:
            text = text[: span.start] + " " * (span.end - span.start) + text[span.end :]
        lines[number - 1] = text
    return "\n".join(lines)


def _matches(line: str, spans: list[Span], rule: Rule) -> list[re.Match[str]]:
    if rule.line_if is not None and not rule.line_if.search(line):
        return []
    found = []
    for m in rule.pattern.finditer(line):
        ok = (
            is_whole_string(spans, m.start(), m.end())
            if rule.where == "string"
            else in_code(spans, m.start(), m.end())
        )
        if ok:
            found.append(m)
    return found


def _rewrite_line(
    line: str,
    spans: list[Span],
    rules: list[Rule],
    shims: bool,
    edits: LineEdits,
    applied: list[str],
) -> str:
    """Apply every rule to one line, recording where the text changed length."""
    for rule in rules:
        if rule.gone:
            continue
        changes = []
        for m in _matches(line, spans, rule):
            new = rule.rewrite(m, shims)
            if new is not None and new != m.group(0):
                changes.append((m.start(), m.end(), new))
        # Right to left, so earlier match positions stay valid in the current text.
        for start, end, new in reversed(changes):
            line = line[:start] + new + line[end:]
            edits.record(start, end, len(new))
            spans = _shifted(spans, end, len(new) - (end - start))
        if changes:
            applied.append(rule.course)
    return line


def _shifted(spans: list[Span], after: int, delta: int) -> list[Span]:
    """The spans of a line after the code ending at ``after`` changed length by ``delta``."""
    if not delta:
        return spans
    return [
        Span(s.start + delta, s.end + delta, s.kind, s.whole) if s.start >= after else s
        for s in spans
    ]


def _gone_in(line: str, spans: list[Span], rule: Rule, number: int) -> list[Gone]:
    return [Gone(number, m.start() + 1, m.group(0), rule) for m in _matches(line, spans, rule)]


def table_markdown() -> str:
    """The translation table as Markdown (the README carries a copy)."""
    rows = [
        "| course spelling | TVM 0.27 spelling | in a Python cell (course mode) | why |",
        "| --- | --- | --- | --- |",
    ]
    for rule in RULES:
        if rule.gone:
            python = "fails where it runs, naming the 0.27 way"
        elif rule.shim is not None:
            python = f"course shim `{_shim_text(rule)}`"
        else:
            python = "same"
        modern = f"`{rule.modern}`" if rule.modern != "-" else "(none)"
        why = rule.gone or rule.why
        rows.append(f"| `{rule.course}` | {modern} | {python} | {why} |")
    return "\n".join(rows)


def _shim_text(rule: Rule) -> str:
    if rule.shim_text:
        return rule.shim_text
    example = rule.pattern.search(rule.course.split(" / ")[0])
    if example is None or (rule.line_if is not None and not rule.line_if.search(rule.course)):
        return str(rule.shim) if isinstance(rule.shim, str) else rule.course
    text = rule.rewrite(example, shims=True) or ""
    return rule.course.split(" / ")[0].replace(example.group(0), text, 1)


if __name__ == "__main__":
    print(table_markdown())
