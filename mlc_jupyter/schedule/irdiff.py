"""Line diffs between two IR texts (pure :mod:`difflib`, no TVM).

Used by the schedule stepper and the trace replay widget to mark what a step changed.
"""

from __future__ import annotations

import difflib

__all__ = ["changed_lines", "side_by_side", "unified_diff"]


def _opcodes(before: str, after: str) -> list[tuple[str, int, int, int, int]]:
    matcher = difflib.SequenceMatcher(None, before.splitlines(), after.splitlines(), autojunk=False)
    return matcher.get_opcodes()


def changed_lines(before: str, after: str) -> list[int]:
    """Return the 1-based line numbers of ``after`` that are new or changed.

    Parameters
    ----------
    before, after
        The texts before and after a step (for example two ``mod.script()`` outputs).
    """
    lines: list[int] = []
    for tag, _i1, _i2, j1, j2 in _opcodes(before, after):
        if tag in ("replace", "insert"):
            lines.extend(range(j1 + 1, j2 + 1))
    return lines


def unified_diff(before: str, after: str, context: int = 3) -> str:
    """Return a unified diff of ``before`` -> ``after`` ("" when they are equal)."""
    diff = difflib.unified_diff(
        before.splitlines(),
        after.splitlines(),
        fromfile="before",
        tofile="after",
        n=context,
        lineterm="",
    )
    return "\n".join(diff)


def side_by_side(before: str, after: str) -> list[tuple[str | None, str | None, str]]:
    """Pair the lines of ``before`` and ``after`` for a two-column view.

    Returns
    -------
    list of (left, right, tag)
        ``tag`` is ``"equal"``, ``"replace"``, ``"delete"`` (right is ``None``) or ``"insert"``
        (left is ``None``).
    """
    old, new = before.splitlines(), after.splitlines()
    rows: list[tuple[str | None, str | None, str]] = []
    for tag, i1, i2, j1, j2 in _opcodes(before, after):
        if tag == "equal":
            rows.extend(
                (old[i], new[j], "equal") for i, j in zip(range(i1, i2), range(j1, j2), strict=True)
            )
        elif tag == "delete":
            rows.extend((old[i], None, "delete") for i in range(i1, i2))
        elif tag == "insert":
            rows.extend((None, new[j], "insert") for j in range(j1, j2))
        else:
            left, right = old[i1:i2], new[j1:j2]
            for k in range(max(len(left), len(right))):
                lt = left[k] if k < len(left) else None
                rt = right[k] if k < len(right) else None
                kind = (
                    "replace"
                    if lt is not None and rt is not None
                    else ("delete" if rt is None else "insert")
                )
                rows.append((lt, rt, kind))
    return rows
