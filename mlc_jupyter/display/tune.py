"""Tuning progress and results as rich output: HTML with inline styles plus a text fallback."""

from __future__ import annotations

import html
from typing import Any

from ..measure.machine import cached_machine_limits
from ..tune.report import TuneProgress, TuneResult
from .roofline import RooflinePoint, roofline_svg, roofline_text

_BOX = (
    "font-family: var(--jp-code-font-family, monospace); font-size: 12px; "
    "color: var(--jp-content-font-color1, inherit); padding: 4px 0"
)


def _latency(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    if seconds < 1:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds:.2f} s"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = round(seconds)
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def _curve_svg(curves: dict[str, tuple[tuple[int, float], ...]], total: int) -> str:
    """A small step plot of best latency against trials, one line per task."""
    width, height, pad = 320, 90, 4
    points = [p for curve in curves.values() for p in curve]
    if not points:
        return ""
    top = max(lat for _, lat in points)
    low = min(lat for _, lat in points)
    span = (top - low) or top or 1.0
    colors = ["#1976d2", "#e65100", "#2e7d32", "#6a1b9a", "#c62828", "#00838f"]
    lines = []
    for i, curve in enumerate(curves.values()):
        coords = []
        for trial, lat in curve:
            x = pad + (width - 2 * pad) * trial / max(total, 1)
            y = pad + (height - 2 * pad) * (1 - (top - lat) / span)
            coords.append(f"{x:.1f},{y:.1f}")
        color = colors[i % len(colors)]
        lines.append(
            f'<polyline fill="none" stroke="{color}" stroke-width="1.5" '
            f'points="{" ".join(coords)}"/>'
        )
    return (
        f'<svg width="{width}" height="{height}" role="img" '
        f'aria-label="best latency against trials" '
        f'style="border: 1px solid var(--jp-border-color2, #ccc)">{"".join(lines)}</svg>'
    )


def _best(latency: float | None, gflops: float | None, fraction: float | None) -> str:
    """``1.234 ms (170.2 GFLOP/s, 74% of peak)``."""
    extra = [f"{gflops:.1f} GFLOP/s"] if gflops else []
    if fraction:
        extra.append(f"{fraction:.0%} of peak")
    return _latency(latency) + (f" ({', '.join(extra)})" if extra else "")


def progress_text(event: TuneProgress) -> str:
    """One line for a terminal: trials, best kernel (latency, GFLOP/s, % of this machine's
    peak), elapsed, and what is left of the budget."""
    errors = ""
    if event.build_errors or event.run_errors:
        errors = f", failed: {event.build_errors} build / {event.run_errors} run"
    resumed = f", resumed from {event.resumed_from}" if event.resumed_from else ""
    trials = (
        f"{event.trials_done}/{event.trials_total}" if event.trials_total else event.trials_done
    )
    budget = f" of {_duration(event.time_budget_s)}" if event.time_budget_s else ""
    left = "at most " if event.time_budget_s and not event.trials_total else "~"
    return (
        f"[{event.task}] {trials} trials, "
        f"best {_best(event.best_latency_s, event.best_gflops, event.peak_fraction)}, "
        f"elapsed {_duration(event.elapsed_s)}{budget}, left {left}{_duration(event.eta_s)}"
        f"{resumed}{errors}"
    )


def _fraction_done(event: TuneProgress) -> float:
    if event.trials_total:
        return event.trials_done / event.trials_total
    if event.time_budget_s:
        return min(1.0, event.elapsed_s / event.time_budget_s)
    return 0.0


def progress_bundle(event: TuneProgress, curves: dict[str, Any] | None = None) -> dict[str, str]:
    """The live progress block: a bar, the numbers, the curve, where the log is."""
    bar = (
        '<div style="width: 320px; height: 8px; background: var(--jp-layout-color3, #ddd)">'
        f'<div style="width: {100 * _fraction_done(event):.0f}%; height: 8px; '
        'background: var(--jp-brand-color1, #1976d2)"></div></div>'
    )
    curves = curves or {event.task: event.curve}
    error = f"<div>first error: {html.escape(event.first_error)}</div>" if event.first_error else ""
    total = event.trials_total or max((p[0] for c in curves.values() for p in c), default=1)
    body = (
        f'<div style="{_BOX}">{bar}<div>{html.escape(progress_text(event))}</div>'
        f"{_curve_svg(curves, total)}{error}"
        f"<div>log: <code>{html.escape(event.log_path)}</code></div></div>"
    )
    return {"text/html": body, "text/plain": progress_text(event)}


_STOPPED = {
    "trials": "all trials measured",
    "time": "time budget used",
    "converged": "search converged",
    "interrupted": "interrupted",
}


def _roofline_points(result: TuneResult) -> list[RooflinePoint]:
    if not result.flop or not result.bytes:
        return []
    intensity = result.flop / result.bytes
    points = []
    if result.baseline_latency_s:
        points.append(
            RooflinePoint("untuned", intensity, result.flop / result.baseline_latency_s / 1e9)
        )
    if result.best_gflops:
        points.append(RooflinePoint("tuned", intensity, result.best_gflops, "tuned"))
    return points


def _cores(result: TuneResult) -> int:
    attrs = getattr(result.target, "attrs", {}) or {}
    return int(attrs["num-cores"]) if "num-cores" in attrs else 1


_TASK_HEAD = ("kernel", "calls", "share", "trials", "default", "tuned", "kept")


def model_task_rows(result: TuneResult) -> list[tuple[str, ...]]:
    """A whole-model tune's table: each kernel's share, trials, latency before and after."""
    rows = [_TASK_HEAD]
    for t in result.model_tasks:
        rows.append(
            (
                t.name,
                str(t.calls) if t.calls else "-",
                f"{t.share:.1%}",
                str(t.trials) if t.trials else "-",
                _latency(t.before_s),
                _latency(t.after_s),
                t.kept,
            )
        )
    return rows


def _aligned(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in rows
    ]


def result_text(result: TuneResult) -> str:
    """The summary a result prints: latencies, % of peak, why it stopped, where the work dir is."""
    speedup = f"{result.speedup:.2f}x" if result.speedup else "-"
    reason = result.stop_reason or ("interrupted" if result.interrupted else "")
    stopped = _STOPPED.get(reason, reason)
    header = f"TuneResult ({result.kind}, {result.n_records} records" + (
        f", {stopped})" if stopped else ")"
    )
    untuned = "default " if result.kind == "model" else "untuned "
    lines = [
        header,
        f"  tuned    {_best(result.best_latency_s, result.best_gflops, result.peak_fraction)}",
        f"  {untuned} {_latency(result.baseline_latency_s)}   speed-up {speedup}",
        f"  trials   {result.trials_new} new"
        + (f", {result.resumed_from} from earlier runs" if result.resumed_from else "")
        + (f" ({_duration(result.elapsed_s)})" if result.elapsed_s else ""),
    ]
    spaces = sorted(set(result.spaces.values()))
    if spaces:
        lines.append(f"  space    {', '.join(spaces)}")
    lines.append(f"  work dir {result.work_dir}")
    if result.build_errors or result.run_errors:
        lines.append(
            f"  failed   {result.build_errors} build / {result.run_errors} run; "
            f"first: {result.first_error}"
        )
    if result.rpc:
        lines.append(f"  measured on RPC devices {result.rpc}")
    if result.model_tasks:
        lines += ["  " + line for line in _aligned(model_task_rows(result))]
    lines += [f"  note: {note}" for note in result.notes]
    limits = cached_machine_limits() if result.peak_gflops else None
    points = _roofline_points(result)
    if limits is not None and points:
        lines.append(roofline_text(points, limits, _cores(result)))
    return "\n".join(lines)


def result_bundle(result: TuneResult) -> dict[str, str]:
    text = result_text(result)
    svg = _curve_svg(dict(result.curves), max(result.n_records, 1))
    limits = cached_machine_limits() if result.peak_gflops else None
    points = _roofline_points(result)
    roof = roofline_svg(points, limits, _cores(result)) if limits is not None and points else ""
    return {
        "text/html": f'<div style="{_BOX}"><pre style="margin: 0">{html.escape(text)}</pre>'
        f'<div style="display: flex; gap: 12px; align-items: flex-start">{svg}{roof}</div></div>',
        "text/plain": text,
    }


def register_formatters(ipython: Any) -> None:
    """Show a :class:`TuneResult` with :func:`result_bundle` in notebooks and terminals."""
    formatters = ipython.display_formatter.formatters
    formatters["text/html"].for_type(TuneResult, lambda r: result_bundle(r)["text/html"])
    formatters["text/plain"].for_type(TuneResult, lambda r, p, cycle: p.text(result_text(r)))
