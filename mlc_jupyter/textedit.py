"""Line-preserving text edits that know where strings and comments are.

The dialect rules (:mod:`mlc_jupyter.dialect`) rewrite names in cell text. They must not touch a
string or a comment that merely *mentions* an old name (``print("tvm.nd is gone")``), and every
rewrite stays on its own line so line numbers never move. :func:`literal_spans` finds strings and
comments with one regular expression (it also copes with text that is not valid Python, such as a
cell with a syntax error); :class:`LineEdits` records where a line changed length so that a
column in the rewritten text maps back to the column the user typed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: A comment, or a string literal (with prefix, triple quotes, escapes); an unterminated string
#: runs to the end of its line (one quote) or of the text (three quotes).
_LITERAL = re.compile(
    r"""(?P<comment>\#[^\n]*)
    |(?P<string>(?:(?<![\w])[rRbBuUfF]{1,2})?
        (?:\"\"\"(?:\\.|[^\\])*?(?:\"\"\"|\Z)
          |'''(?:\\.|[^\\])*?(?:'''|\Z)
          |"(?:\\.|[^"\\\n])*(?:"|$)
          |'(?:\\.|[^'\\\n])*(?:'|$)))""",
    re.VERBOSE | re.DOTALL | re.MULTILINE,
)


@dataclass(frozen=True)
class Span:
    """A string or comment on one line: ``[start, end)`` columns (0-based), and what it is.

    ``whole`` is true when the span is a complete one-line string literal (a rule that rewrites a
    string, such as the ``"tir.noalias"`` key, only rewrites such literals).
    """

    start: int
    end: int
    kind: str
    whole: bool = False


def literal_spans(source: str) -> dict[int, list[Span]]:
    """1-based line number -> the string and comment spans on that line, in order."""
    starts = [0]
    for match in re.finditer("\n", source):
        starts.append(match.end())
    spans: dict[int, list[Span]] = {}
    line = 1
    for match in _LITERAL.finditer(source):
        kind = "comment" if match.group("comment") is not None else "string"
        begin, _end = match.span()
        while line < len(starts) and starts[line] <= begin:
            line += 1
        first = line
        text = match.group(0)
        if "\n" not in text:
            col = begin - starts[first - 1]
            spans.setdefault(first, []).append(Span(col, col + len(text), kind, kind == "string"))
            continue
        # A triple-quoted string over several lines: one span per line it covers.
        number, offset = first, begin
        for part in text.split("\n"):
            col = offset - starts[number - 1]
            spans.setdefault(number, []).append(Span(col, col + len(part), kind))
            offset += len(part) + 1
            number += 1
    return spans


def in_code(spans: list[Span], start: int, end: int) -> bool:
    """True when ``[start, end)`` overlaps no string or comment."""
    return all(end <= s.start or start >= s.end for s in spans)


def is_whole_string(spans: list[Span], start: int, end: int) -> bool:
    """True when ``[start, end)`` is exactly one complete string literal."""
    return any(s.whole and s.start == start and s.end == end for s in spans)


@dataclass
class _Edit:
    new_start: int
    new_end: int
    old_start: int
    old_end: int


@dataclass
class LineEdits:
    """The edits made to one line, to map a column of the new text back to the original."""

    edits: list[_Edit] = field(default_factory=list)

    def record(self, start: int, end: int, new_len: int) -> None:
        """Record that ``[start, end)`` of the current text became ``new_len`` characters."""
        delta = new_len - (end - start)
        old_start, old_end = self.to_old(start), self.to_old(end)
        for edit in self.edits:
            if edit.new_start >= end:
                edit.new_start += delta
                edit.new_end += delta
        self.edits.append(_Edit(start, start + new_len, old_start, old_end))
        self.edits.sort(key=lambda e: e.new_start)

    def to_old(self, offset: int) -> int:
        """The 0-based column in the original line of 0-based ``offset`` in the new line.

        A column inside a rewritten name maps to the start of the name as typed.
        """
        shift = 0
        for edit in self.edits:
            if offset < edit.new_start:
                break
            if offset < edit.new_end:
                return edit.old_start
            shift = edit.old_end - edit.new_end
        return offset + shift
