"""Static rendering of a schedule run: the final IR and the list of steps (HTML + text).

This is what a saved notebook shows where the stepper widget cannot run (GitHub, nbviewer).
"""

from __future__ import annotations

import html
from typing import Any

from .highlight import highlight_html

__all__ = ["schedule_bundle", "schedule_text"]

BOX_STYLE = (
    "font-family: var(--jp-ui-font-family, sans-serif); font-size: 12px; "
    "color: var(--jp-ui-font-color1, #222); border: 1px solid var(--jp-border-color2, #ccc); "
    "border-radius: 4px; padding: 6px 8px;"
)


def schedule_text(run: Any) -> str:
    """Plain-text summary: one line per step, the error if any."""
    lines = [f"schedule: {len(run.steps)} steps"]
    for step in run.steps:
        lines.append(f"  {step.index:>2}. line {step.line}: {step.source.strip()}")
    if run.error is not None:
        lines.append(f"  failed: {run.error}")
    return "\n".join(lines)


def steps_html(kind: str, run: Any, items: str, extra: str = "") -> str:
    """The static view of a run of steps (schedule or passes): the list, the error, ``extra``
    (HTML placed before the final module) and the final module highlighted."""
    error = (
        f'<div style="color: var(--jp-error-color1, #c62828)">{html.escape(str(run.error))}</div>'
        if run.error is not None
        else ""
    )
    return (
        f'<div class="mlc-{kind}-static" style="{BOX_STYLE}">'
        f"<div><b>{kind}</b>: {len(run.steps)} steps</div>"
        f'<ol style="margin: 4px 0 6px 1.2em; padding: 0">{items}</ol>{error}{extra}'
        f"<div>final module:</div>{highlight_html(run.final_script)}</div>"
    )


def schedule_bundle(run: Any) -> dict[str, str]:
    """``text/html`` (steps + final IR, inline styles, theme variables) and ``text/plain``."""
    items = "".join(
        f"<li><code>line {s.line}</code>: <code>{html.escape(s.source.strip())}</code></li>"
        for s in run.steps
    )
    return {"text/html": steps_html("schedule", run, items), "text/plain": schedule_text(run)}
