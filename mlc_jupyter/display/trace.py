"""A trace session as static HTML (instruction list grouped by block + final module) and text.

This is what a saved notebook shows where the live widget cannot run (GitHub, nbviewer).
"""

from __future__ import annotations

import html
from typing import Any

from .highlight import highlight_html

_FONT = "font-family: var(--jp-ui-font-family, sans-serif); font-size: 12px;"
_CODE = "font-family: var(--jp-code-font-family, monospace); font-size: 12px; white-space: pre;"


def step_groups(steps: list[Any]) -> list[tuple[str, list[Any]]]:
    """Consecutive instructions acting on the same block; all postprocessing is one group."""
    groups: list[tuple[str, list[Any]]] = []
    for step in steps:
        label = "postprocessing" if step.postproc else (f"block {step.block}" if step.block else "")
        if groups and groups[-1][0] == label:
            groups[-1][1].append(step)
        else:
            groups.append((label, [step]))
    return groups


def decision_text(step: Any) -> str:
    """The decision of a sampling step as a short string ('' for other steps)."""
    info = step.decision
    if info is None:
        return ""
    if info.kind == "tile" and info.extent is not None:
        return f"{info.value} (product {info.extent})"
    labels = dict(info.choices)
    return f"{info.value} = {labels[info.value]}" if info.value in labels else str(info.value)


def trace_text(session: Any) -> str:
    """The plain-text fallback: the trace as Python, grouped, with the current decisions."""
    lines = [f"trace of {session.label}: {session.n_steps} instructions"]
    for label, steps in step_groups(session.steps):
        lines.append(f"# {label}" if label else "#")
        lines.extend(f"  [{s.index}] {s.text}" for s in steps)
    return "\n".join(lines)


def trace_html(session: Any, step: int | None = None) -> str:
    """Instruction list (grouped, the current step marked) and the module after ``step``."""
    k = session.n_steps if step is None else step
    rows = []
    for label, steps in step_groups(session.steps):
        rows.append(
            f'<tr><td colspan="2" style="{_FONT} font-weight: 600; padding-top: 4px">'
            f"{html.escape(label)}</td></tr>"
        )
        for s in steps:
            done = "" if s.index < k else " opacity: 0.45;"
            extra = decision_text(s)
            extra_html = (
                f' <span style="{_FONT} color: var(--jp-brand-color1, #1976d2)">'
                f"decision {html.escape(extra)}</span>"
                if extra
                else ""
            )
            rows.append(
                f'<tr style="{done}"><td style="{_FONT} opacity: 0.6; text-align: right; '
                f'padding-right: 6px">{s.index + 1}</td><td style="{_CODE}">'
                f"{html.escape(s.text)}{extra_html}</td></tr>"
            )
    module = session.module_at(k)
    return (
        f'<div class="mlc-trace-static" style="{_FONT}">'
        f"<div><b>Trace replay</b> ({html.escape(session.label)}): step {k} of "
        f"{session.n_steps}</div>"
        f'<table style="border-collapse: collapse; margin: 4px 0">{"".join(rows)}</table>'
        f"<div>Module after step {k}:</div>{highlight_html(module.script())}</div>"
    )


def trace_bundle(session: Any, step: int | None = None) -> dict[str, str]:
    """``text/html`` + ``text/plain`` for a session."""
    return {"text/html": trace_html(session, step), "text/plain": trace_text(session)}
