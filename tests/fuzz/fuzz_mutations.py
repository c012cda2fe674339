"""Seeded mutations of the MLC book's cells: the slips a learner makes, reproducible by seed.

A *case* is a book cell (a TVMScript listing of ``tests/course/listings``, or a schedule cell of
the book applied to a listing's module) and a *mutation* is one small edit of it: a dropped line,
a changed number, a swapped name, an index shifted by one, and a few more (a duplicated or
swapped line, a dtype, an indentation, a typo, an operator, an axis kind). ``mutation(seed)``
always gives the same edit.
"""

from __future__ import annotations

import itertools
import keyword
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

LISTINGS = Path(__file__).resolve().parents[1] / "course" / "listings"

#: Schedule cells of the book (course spelling), run with ``%%mlc_schedule`` on a listing's module.
SCHEDULES = {
    # §2.4.4, on §2.4.3's MyModule
    "ch2_mm_relu_schedule": (
        "ch2_mm_relu",
        "MyModule",
        'block_Y = sch.get_block("Y", func_name="mm_relu")\n'
        "i, j, k = sch.get_loops(block_Y)\n"
        "j0, j1 = sch.split(j, factors=[None, 4])\n"
        "sch.reorder(j0, k, j1)\n"
        'block_C = sch.get_block("C", "mm_relu")\n'
        "sch.reverse_compute_at(block_C, j0)\n"
        "sch.decompose_reduction(block_Y, k)\n",
    ),
    # §2.5.2, on the elementwise MyAdd
    "ch2_add_schedule": (
        "ch2_add_parallel_vectorize_unroll",
        "MyAdd",
        'block = sch.get_block("C", func_name="add")\n'
        "i, j = sch.get_loops(block)\n"
        "i0, i1 = sch.split(i, factors=[2, 2])\n"
        "sch.parallel(i0)\n"
        "sch.unroll(i1)\n"
        "sch.vectorize(j)\n",
    ),
}


@dataclass(frozen=True)
class Case:
    """A book cell to mutate: ``kind`` is ``tir``, ``relax`` or ``schedule``."""

    name: str
    kind: str
    source: str
    #: For a schedule cell: the listing whose module it schedules, and that module's name.
    base: str = ""
    module: str = ""


@dataclass(frozen=True)
class Mutation:
    """One edit of one case, and where it is (1-based line of the cell body)."""

    seed: int
    case: str
    kind: str
    edit: str
    line: int
    source: str


def listing_cases() -> list[Case]:
    """Every TVMScript listing of the book (the Python-only ones left out)."""
    cases = []
    for path in sorted(LISTINGS.glob("*.py")):
        text = path.read_text()
        if "@R.function" in text:
            cases.append(Case(path.stem, "relax", text))
        elif "@T.prim_func" in text:
            cases.append(Case(path.stem, "tir", text))
    return cases


def all_cases() -> list[Case]:
    cases = listing_cases()
    for name, (base, module, code) in SCHEDULES.items():
        cases.append(Case(name, "schedule", code, base, module))
    return cases


_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])")
_NAME = re.compile(r"\b[A-Za-z_]\w*\b")
_SUBSCRIPT = re.compile(r"\b([A-Za-z_]\w*)\[([^\[\]]+)\]")
_DTYPE = re.compile(r'"(float32|float16|int32|int64|float64)"')
_OPERATOR = re.compile(r"(?<=\s)([+*-])(?=\s)")
_AXIS = re.compile(r"\b(spatial|reduce)\b|(?<=remap\(\")([SR]+)")
_DTYPES = ("float32", "float16", "int32", "int64", "float64", "int8")


def _code_lines(lines: list[str]) -> list[int]:
    """Indexes of lines that are code (not blank, not a comment)."""
    return [i for i, line in enumerate(lines) if line.strip() and not line.lstrip().startswith("#")]


def _replace(line: str, match: re.Match, new: str, group: int = 0) -> str:
    return line[: match.start(group)] + new + line[match.end(group) :]


def _drop_line(lines: list[str], rng: random.Random) -> tuple[int, str] | None:
    i = rng.choice(_code_lines(lines))
    edit = f"dropped: {lines[i].strip()}"
    del lines[i]
    return i, edit


def _duplicate_line(lines: list[str], rng: random.Random) -> tuple[int, str] | None:
    i = rng.choice(_code_lines(lines))
    lines.insert(i, lines[i])
    return i, f"duplicated: {lines[i].strip()}"


def _swap_lines(lines: list[str], rng: random.Random) -> tuple[int, str] | None:
    code = _code_lines(lines)
    pairs = [(a, b) for a, b in itertools.pairwise(code) if b == a + 1]
    if not pairs:
        return None
    a, b = rng.choice(pairs)
    lines[a], lines[b] = lines[b], lines[a]
    return a, f"swapped lines {a + 1} and {b + 1}"


def _in_matches(lines: list[str], pattern: re.Pattern) -> list[tuple[int, re.Match]]:
    return [(i, m) for i in _code_lines(lines) for m in pattern.finditer(lines[i])]


def _change_number(lines: list[str], rng: random.Random) -> tuple[int, str] | None:
    found = _in_matches(lines, _NUMBER)
    if not found:
        return None
    i, m = rng.choice(found)
    old = m.group(0)
    value = float(old) if "." in old else int(old)
    choices = {value + 1, value - 1, value * 2, 0, 1, 3} - {value}
    new = rng.choice(sorted(choices, key=str))
    new_text = str(new) if "." in old or isinstance(new, int) else str(int(new))
    lines[i] = _replace(lines[i], m, new_text)
    return i, f"number {old} -> {new_text}"


def _swap_name(lines: list[str], rng: random.Random) -> tuple[int, str] | None:
    names = sorted(
        {m.group(0) for i in _code_lines(lines) for m in _NAME.finditer(lines[i])}
        - set(keyword.kwlist)
    )
    found = [(i, m) for i, m in _in_matches(lines, _NAME) if m.group(0) not in keyword.kwlist]
    if len(names) < 2 or not found:
        return None
    i, m = rng.choice(found)
    new = rng.choice([n for n in names if n != m.group(0)])
    lines[i] = _replace(lines[i], m, new)
    return i, f"name {m.group(0)} -> {new}"


def _shift_index(lines: list[str], rng: random.Random) -> tuple[int, str] | None:
    found = _in_matches(lines, _SUBSCRIPT)
    if not found:
        return None
    i, m = rng.choice(found)
    parts = m.group(2).split(",")
    k = rng.randrange(len(parts))
    delta = rng.choice([" + 1", " - 1"])
    old = parts[k].strip()
    if not old or old == "...":
        return None
    parts[k] = parts[k].rstrip() + delta
    lines[i] = _replace(lines[i], m, ",".join(parts), 2)
    return i, f"index {m.group(1)}[..{old}..] shifted by {delta.strip()}"


def _change_dtype(lines: list[str], rng: random.Random) -> tuple[int, str] | None:
    found = _in_matches(lines, _DTYPE)
    if not found:
        return None
    i, m = rng.choice(found)
    new = rng.choice([d for d in _DTYPES if d != m.group(1)])
    lines[i] = _replace(lines[i], m, new, 1)
    return i, f"dtype {m.group(1)} -> {new}"


def _change_indent(lines: list[str], rng: random.Random) -> tuple[int, str] | None:
    i = rng.choice(_code_lines(lines))
    if lines[i].startswith("    ") and rng.random() < 0.5:
        lines[i] = lines[i][4:]
        return i, "dedented a line"
    lines[i] = "    " + lines[i]
    return i, "indented a line"


def _typo(lines: list[str], rng: random.Random) -> tuple[int, str] | None:
    found = [(i, m) for i, m in _in_matches(lines, _NAME) if len(m.group(0)) > 2]
    if not found:
        return None
    i, m = rng.choice(found)
    word = m.group(0)
    k = rng.randrange(len(word))
    lines[i] = _replace(lines[i], m, word[:k] + word[k + 1 :])
    return i, f"typo {word} -> {word[:k] + word[k + 1 :]}"


def _change_operator(lines: list[str], rng: random.Random) -> tuple[int, str] | None:
    found = _in_matches(lines, _OPERATOR)
    if not found:
        return None
    i, m = rng.choice(found)
    new = rng.choice([op for op in "+-*" if op != m.group(1)])
    lines[i] = _replace(lines[i], m, new, 1)
    return i, f"operator {m.group(1)} -> {new}"


def _change_axis(lines: list[str], rng: random.Random) -> tuple[int, str] | None:
    found = _in_matches(lines, _AXIS)
    if not found:
        return None
    i, m = rng.choice(found)
    if m.group(1):
        new = "reduce" if m.group(1) == "spatial" else "spatial"
        lines[i] = _replace(lines[i], m, new, 1)
        return i, f"axis {m.group(1)} -> {new}"
    kinds = m.group(2)
    k = rng.randrange(len(kinds))
    new = kinds[:k] + ("R" if kinds[k] == "S" else "S") + kinds[k + 1 :]
    lines[i] = _replace(lines[i], m, new, 2)
    return i, f"axis kinds {kinds} -> {new}"


#: Mutation kinds: the four the issue names first, then our own.
KINDS: dict[str, Callable[[list[str], random.Random], tuple[int, str] | None]] = {
    "drop_line": _drop_line,
    "change_number": _change_number,
    "swap_name": _swap_name,
    "shift_index": _shift_index,
    "duplicate_line": _duplicate_line,
    "swap_lines": _swap_lines,
    "change_dtype": _change_dtype,
    "change_indent": _change_indent,
    "typo": _typo,
    "change_operator": _change_operator,
    "change_axis": _change_axis,
}


def mutation(seed: int, cases: list[Case] | None = None) -> Mutation:
    """The mutation for ``seed``: a case, a kind and an edit, all drawn from ``seed``.

    A kind that does not apply to the drawn case (no dtype to change, say), or an edit that
    leaves the text as it was, is drawn again from the same generator.
    """
    cases = cases or all_cases()
    rng = random.Random(seed)  # noqa: S311 - reproducible edits, not secrets
    while True:
        case = rng.choice(cases)
        kind = rng.choice(list(KINDS))
        lines = case.source.splitlines()
        done = KINDS[kind](lines, rng)
        text = "\n".join(lines) + "\n"
        if done is not None and text != case.source:
            line, edit = done
            return Mutation(seed, case.name, kind, edit, line + 1, text)
