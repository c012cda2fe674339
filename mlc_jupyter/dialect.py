"""The MLC course's TVM spelling -> TVM 0.27's spelling, for the text of a cell.

Every rewrite stays on its own line, so line numbers never move; the few rewrites that change a
line's length are recorded, so a column TVM reports in the translated text maps back to the column
the user typed (:meth:`Translation.original_column`). Each rule is a row of :data:`RULES`, which is
also the table printed in the README (``python -m mlc_jupyter.dialect`` prints it).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Rule:
    """One rewrite: a course spelling, its 0.27 spelling, and why it matters."""

    course: str
    modern: str
    why: str
    pattern: re.Pattern[str]
    replace: Callable[[re.Match[str]], str]


def _sub(text: str) -> Callable[[re.Match[str]], str]:
    return lambda m: m.expand(text)


def _script_import(m: re.Match[str]) -> str:
    names = re.sub(r"\btir\b(?!x)", "tirx", m.group(2))
    return m.group(1) + names


def _prim_func_decorator(m: re.Match[str]) -> str:
    args = m.group(2)
    if args is None:
        return f"{m.group(1)}(s_tir=True)"
    if "s_tir" in args:
        return m.group(0)
    inner = args[1:-1].strip()
    return f"{m.group(1)}(s_tir=True{', ' + inner if inner else ''})"


RULES: tuple[Rule, ...] = (
    Rule(
        "from tvm.script import tir as T",
        "from tvm.script import tirx as T",
        "the TIR dialect module was renamed",
        re.compile(r"^(\s*from\s+tvm\.script\s+import\s+)(.*)$"),
        _script_import,
    ),
    Rule(
        "@T.prim_func / @T.prim_func(private=True)",
        "@T.prim_func(s_tir=True) / @T.prim_func(s_tir=True, private=True)",
        "functions with blocks must say s_tir=True; TVM reads it from the decorator's text",
        re.compile(r"(@\s*T\.prim_func)(\([^()]*\))?(?=\s*(#.*)?$)"),
        _prim_func_decorator,
    ),
    Rule(
        'with T.block("Y"):',
        'with T.sblock("Y"):',
        "blocks are called sblocks",
        re.compile(r"\bT\.block\s*\("),
        _sub("T.sblock("),
    ),
    Rule(
        "T.block_attr({...})",
        "T.sblock_attr({...})",
        "blocks are called sblocks",
        re.compile(r"\bT\.block_attr\s*\("),
        _sub("T.sblock_attr("),
    ),
    Rule(
        '"tir.noalias": True',
        '"tirx.noalias": True',
        'trap: "tir.noalias" is silently ignored, so LLVM loses noalias and the book\'s '
        "schedules run 2-5x slower",
        re.compile(r"""(["'])tir\.noalias\1"""),
        _sub(r"\1tirx.noalias\1"),
    ),
    Rule(
        "R.call_tir(f, args, out_sinfo=...)",
        "R.call_tir(f, args, out_ty=...)",
        "the keyword was renamed (also for R.call_dps_packed)",
        re.compile(r"\bout_sinfo(\s*=)"),
        _sub(r"out_ty\1"),
    ),
    Rule(
        "tvm.tir.Schedule(mod)",
        "tvm.s_tir.Schedule(mod)",
        "schedules moved to tvm.s_tir",
        re.compile(r"\btvm\.tir\.Schedule\b"),
        _sub("tvm.s_tir.Schedule"),
    ),
    Rule(
        "tvm.tir.TensorIntrin",
        "tvm.s_tir.TensorIntrin",
        "tensor intrinsics moved to tvm.s_tir",
        re.compile(r"\btvm\.tir\.TensorIntrin\b"),
        _sub("tvm.s_tir.TensorIntrin"),
    ),
    Rule(
        "tvm.tir.<name>",
        "tvm.tirx.<name>",
        "the TIR namespace was renamed",
        re.compile(r"\btvm\.tir\b(?!x)"),
        _sub("tvm.tirx"),
    ),
    Rule(
        "from tvm import tir",
        "from tvm import tirx as tir",
        "the TIR namespace was renamed",
        re.compile(r"^(\s*)from\s+tvm\s+import\s+tir\s*$"),
        _sub(r"\1from tvm import tirx as tir"),
    ),
    Rule(
        "from tvm import meta_schedule as ms",
        "from tvm.s_tir import meta_schedule as ms",
        "MetaSchedule moved to tvm.s_tir",
        re.compile(r"^(\s*)from\s+tvm\s+import\s+meta_schedule\b"),
        _sub(r"\1from tvm.s_tir import meta_schedule"),
    ),
    Rule(
        "tvm.meta_schedule",
        "tvm.s_tir.meta_schedule",
        "MetaSchedule moved to tvm.s_tir",
        re.compile(r"\btvm\.meta_schedule\b"),
        _sub("tvm.s_tir.meta_schedule"),
    ),
    Rule(
        "sch.get_block(name)",
        "sch.get_sblock(name)",
        "blocks are called sblocks",
        re.compile(r"\.get_block\s*\("),
        _sub(".get_sblock("),
    ),
    Rule(
        "tvm.nd.array(x) / tvm.nd.empty(shape)",
        "tvm.runtime.tensor(x) / tvm.runtime.empty(shape)",
        "tvm.nd is gone",
        re.compile(r"\btvm\.nd\.(array|empty)\b"),
        lambda m: "tvm.runtime." + ("tensor" if m.group(1) == "array" else "empty"),
    ),
    Rule(
        "tvm.nd.NDArray",
        "tvm.runtime.Tensor",
        "tvm.nd is gone",
        re.compile(r"\btvm\.nd\.NDArray\b"),
        _sub("tvm.runtime.Tensor"),
    ),
)


@dataclass
class _Edit:
    new_start: int
    new_end: int
    old_start: int
    old_end: int


@dataclass
class Translation:
    """The translated source and what is needed to map positions back to the original."""

    original: str
    source: str
    edits: dict[int, list[_Edit]] = field(default_factory=dict)
    applied: tuple[str, ...] = ()

    def original_column(self, line: int, column: int) -> int:
        """Map a 1-based ``column`` on 1-based ``line`` of :attr:`source` to the original text."""
        offset = column - 1
        shift = 0
        for edit in self.edits.get(line, []):
            if offset < edit.new_start:
                break
            if offset < edit.new_end:
                return edit.old_start + 1
            shift = edit.old_end - edit.new_end
        return offset + shift + 1

    def original_line(self, line: int) -> str:
        """The text of 1-based ``line`` as the user typed it."""
        lines = self.original.splitlines()
        return lines[line - 1] if 0 < line <= len(lines) else ""


def translate(source: str) -> Translation:
    """Rewrite the course's spelling in ``source`` to TVM 0.27's, keeping every line in place.

    The modern spelling passes through unchanged, so cells may mix both.
    """
    out_lines: list[str] = []
    edits: dict[int, list[_Edit]] = {}
    applied: list[str] = []
    for number, line in enumerate(source.split("\n"), start=1):
        new_line, line_applied = _rewrite_with_edits(line, edits.setdefault(number, []))
        out_lines.append(new_line)
        applied.extend(line_applied)
    return Translation(source, "\n".join(out_lines), edits, tuple(dict.fromkeys(applied)))


def _rewrite_with_edits(line: str, edits: list[_Edit]) -> tuple[str, list[str]]:
    """Apply every rule to one line, recording where the text changed length."""
    applied: list[str] = []
    for rule in RULES:
        matches = [m for m in rule.pattern.finditer(line) if rule.replace(m) != m.group(0)]
        # Right to left, so earlier match positions stay valid in the current text.
        for m in reversed(matches):
            replacement = rule.replace(m)
            line = line[: m.start()] + replacement + line[m.end() :]
            _record(edits, m.start(), m.end(), len(replacement))
        if matches:
            applied.append(rule.course)
    return line, applied


def _record(edits: list[_Edit], start: int, end: int, new_len: int) -> None:
    """Record an edit made on the current text of a line, in the original line's coordinates."""
    delta = new_len - (end - start)
    # Move earlier edits that lie after this one, then convert positions to the original.
    old_start = _to_old(edits, start)
    old_end = _to_old(edits, end)
    for edit in edits:
        if edit.new_start >= end:
            edit.new_start += delta
            edit.new_end += delta
    edits.append(_Edit(start, start + new_len, old_start, old_end))
    edits.sort(key=lambda e: e.new_start)


def _to_old(edits: list[_Edit], offset: int) -> int:
    shift = 0
    for edit in edits:
        if offset < edit.new_start:
            break
        if offset < edit.new_end:
            return edit.old_start
        shift = edit.old_end - edit.new_end
    return offset + shift


def table_markdown() -> str:
    """The translation table as Markdown (the README carries a copy)."""
    rows = ["| course spelling | TVM 0.27 spelling | why |", "| --- | --- | --- |"]
    for rule in RULES:
        rows.append(f"| `{rule.course}` | `{rule.modern}` | {rule.why} |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(table_markdown())
