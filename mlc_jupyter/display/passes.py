"""Static rendering of a pass run: the steps, their graphs before and after, the final IR.

What a saved notebook shows where the pass stepper widget cannot run (GitHub, nbviewer), and the
text a terminal shows.
"""

from __future__ import annotations

import html
from typing import Any

from ..graph import function_graph, relax_function_names
from .graph import graph_html
from .schedule import steps_html

__all__ = ["passes_bundle", "passes_text", "step_summary"]


def step_summary(step: Any) -> str:
    """``FuseTIR: +fused_matmul_add_relu -add`` or ``LegalizeOps: no change``."""
    if not step.changed:
        return f"{step.name}: no change"
    parts = [f"+{n}" for n in step.appeared] + [f"-{n}" for n in step.vanished]
    return f"{step.name}: " + (" ".join(parts) if parts else "changed")


def passes_text(run: Any) -> str:
    """Plain text: one line per step (unchanged ones say so), the error if any."""
    lines = [f"passes: {len(run.steps)} steps"]
    for step in run.steps:
        where = f"line {step.line}: " if step.line else ""
        lines.append(f"  {step.index:>2}. {where}{step_summary(step)}")
    if run.error is not None:
        lines.append(f"  failed: {run.error}")
    return "\n".join(lines)


def _graph_or_nothing(mod: Any) -> str:
    if mod is None or not relax_function_names(mod):
        return ""
    return graph_html(function_graph(mod))


def passes_bundle(run: Any) -> dict[str, str]:
    """``text/html`` (steps, graphs of the first and last module, final IR) and ``text/plain``."""
    items = "".join(
        f'<li style="{"" if s.changed else "opacity: 0.5"}">'
        f"{html.escape(step_summary(s))}"
        + (f" <code>line {s.line}</code>" if s.line else "")
        + "</li>"
        for s in run.steps
    )
    last = run.module_at(len(run.steps))
    before, after = _graph_or_nothing(run.initial_mod), _graph_or_nothing(last)
    graphs = (
        '<div style="display: flex; gap: 16px; align-items: flex-start; flex-wrap: wrap">'
        f"<div><b>before</b>{before}</div><div><b>after</b>{after}</div></div>"
        if before or after
        else ""
    )
    html_text = steps_html("passes", run, items, graphs)
    return {"text/html": html_text, "text/plain": passes_text(run)}
