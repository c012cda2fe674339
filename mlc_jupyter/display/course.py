"""``%mlc_course``: whether course mode is on, and what it changed in the last cell, side by side."""

from __future__ import annotations

import html
from typing import Any

from .highlight import MARK_BACKGROUND, PRE_STYLE


def course_bundle(enabled: bool, translation: Any | None) -> dict[str, str]:
    """A mimebundle: the mode, then the last cell's changed lines as typed and as run."""
    state = "on" if enabled else "off"
    head = (
        f"course mode is {state}: ordinary cells "
        + ("are translated from the MLC course's TVM spelling to TVM 0.27's" if enabled
           else "run as typed (stock TVM 0.27)")
    )  # fmt: skip
    changes = translation.changed_lines() if translation is not None else []
    if translation is None:
        tail = "no cell translated yet"
    elif not changes:
        tail = "the last cell needed no translation"
    else:
        tail = f"the last cell: {len(changes)} line(s) changed"
    text = [head, tail]
    width = max((len(a) for _, a, _ in changes), default=0)
    for line, typed, run in changes:
        text.append(f"{line:>4} | {typed:<{width}} | {run}")
    rows = "".join(
        f"<tr><td style='text-align:right;opacity:.6;padding-right:8px'>{line}</td>"
        f"<td><pre style='{PRE_STYLE}'>{html.escape(typed)}</pre></td>"
        f"<td style='background:{MARK_BACKGROUND}'><pre style='{PRE_STYLE}'>"
        f"{html.escape(run)}</pre></td></tr>"
        for line, typed, run in changes
    )
    table = (
        "<table style='border-collapse:collapse'><tr><th></th><th style='text-align:left'>"
        "as typed</th><th style='text-align:left'>as run on TVM 0.27</th></tr>"
        f"{rows}</table>"
        if changes
        else ""
    )
    page = f"<div><b>{html.escape(head)}</b><br>{html.escape(tail)}{table}</div>"
    return {"text/plain": "\n".join(text), "text/html": page}
