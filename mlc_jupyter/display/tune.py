"""Tuning progress and results as rich output: HTML with inline styles plus a text fallback."""

from __future__ import annotations

import html
import math
import re
import textwrap
from itertools import groupby
from typing import Any

from ..compilation.targets import is_cpu
from ..measure.machine import cached_machine_limits
from ..tune.report import ModelTask, TuneProgress, TuneResult
from .highlight import PLAIN_PRE
from .roofline import RooflinePoint, roofline_svg, roofline_text

_BOX = (
    "font-family: var(--jp-code-font-family, monospace); font-size: 12px; "
    "color: var(--jp-content-font-color1, inherit); padding: 4px 0"
)


#: The result's plain text wraps its labelled lines and notes at this many characters, under the
#: label's text (its HTML wraps them at the output's width, the same way).
TEXT_WIDTH = 100
#: A labelled line in HTML: wrapped at the output's width, its continuation under the label's text.
_HANGING = (
    "margin: 0; white-space: pre-wrap; overflow-wrap: break-word; "
    "padding-left: {indent}ch; text-indent: -{indent}ch"
)

#: A result's lines, each with whether it is a table row (which keeps its columns, unwrapped).
Rows = list[tuple[str, bool]]


def _label_width(line: str) -> int:
    """Where a labelled line's text starts (``  label    text``, ``  note: text``)."""
    label = re.match(r" *\S+ +", line)
    return label.end() if label else 0


def _wrapped(line: str) -> str:
    """A labelled line wrapped to :data:`TEXT_WIDTH`, its continuation under the label's text."""
    if len(line) <= TEXT_WIDTH:
        return line
    return textwrap.fill(
        line,
        TEXT_WIDTH,
        subsequent_indent=" " * _label_width(line),
        break_long_words=False,
        break_on_hyphens=False,
    )


def _rows_text(rows: Rows) -> str:
    """The lines as plain text: labelled ones wrapped (:func:`_wrapped`), a table's rows not."""
    return "\n".join(line if is_table else _wrapped(line) for line, is_table in rows)


def _rows_html(rows: Rows) -> str:
    """Each labelled line a block wrapped at the output's width under its label's text; a
    table's rows one block that keeps its columns and scrolls."""
    parts: list[str] = []
    for is_table, group in groupby(rows, key=lambda row: row[1]):
        lines = [line for line, _ in group]
        if is_table:
            columns = html.escape("\n".join(lines))
            parts.append(f'<pre style="{PLAIN_PRE}">{columns}</pre>')
        else:
            parts += [
                f'<div style="{_HANGING.format(indent=_label_width(line))}">'
                f"{html.escape(line) or '&nbsp;'}</div>"
                for line in lines
            ]
    return "".join(parts)


def _latency(seconds: float | None) -> str:
    """``4.35 us``, ``101.5 us``, ``1.064 ms``: three significant digits at least (never 0.0)."""
    if seconds is None:
        return "-"
    if seconds < 1e-6:
        return f"{seconds * 1e6:.2g} us"
    if seconds < 1e-5:
        return f"{seconds * 1e6:#.3g} us"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    if seconds < 1:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds:.2f} s"


def _rpc_devices(count: int) -> str:
    """How many RPC devices measured, as the summary's ``measured on`` line says it."""
    if count > 1:
        return f"{count} RPC devices at once (one candidate each) under"
    return "1 RPC device under" if count == 1 else "RPC devices"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    seconds = round(seconds)
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


#: Colours of the curves, one per task.
_CURVE_COLOURS = ("#1976d2", "#e65100", "#2e7d32", "#6a1b9a", "#c62828", "#00838f")
_INK = "var(--jp-ui-font-color2, #666)"
#: The narrowest span of a curve's y axis (top over bottom): a 5 % gain stays a small step.
_MIN_SPAN = 1.6
#: How far from the curve's best the axis reaches, up and down: a slow first candidate, or a
#: reference line far away, is cut at the edge (and said in the key) instead of flattening the
#: curve.
_REACH_UP, _REACH_DOWN = 20.0, 5.0


def _axis_unit(high: float) -> tuple[str, float]:
    """One unit for every tick of an axis reaching ``high`` seconds."""
    if high < 1e-3:
        return "us", 1e6
    if high < 1:
        return "ms", 1e3
    return "s", 1.0


def _tick_text(value: float, unit: str, scale: float) -> str:
    """A tick's label in the axis's unit, two significant digits at least: never ``0.0``."""
    v = value * scale
    digits = max(2, 1 + math.floor(math.log10(v))) if v >= 1 else 2
    return f"{v:.{digits}g} {unit}"


def _log_ticks(low: float, high: float) -> list[float]:
    """Ticks of a log axis from ``low`` to ``high``: 1-2-5 per decade, or every digit, or every
    half digit when the span is too narrow for two of those."""
    halves = tuple(m / 2 for m in range(2, 20))  # 1, 1.5, 2, ... 9.5
    for steps in ((1, 2, 5), (1, 2, 3, 4, 5, 6, 7, 8, 9), halves):
        ticks = [
            m * 10.0**e
            for e in range(math.floor(math.log10(low)) - 1, math.ceil(math.log10(high)) + 1)
            for m in steps
            if low <= m * 10.0**e <= high
        ]
        if len(ticks) >= 2:
            return ticks
    return [low, high]


#: A curve's first point this many times its second is an outlier (a slow first candidate).
_OUTLIER = 3.0


def _robust(curve: tuple[tuple[int, float], ...]) -> list[float]:
    """A curve's latencies without a first point far above the rest."""
    values = [lat for _, lat in curve if lat > 0]
    if len(values) > 1 and values[0] > _OUTLIER * values[1]:
        return values[1:]
    return values


def _y_range(latencies: list[float], refs: list[float]) -> tuple[float, float]:
    """A log axis around the curve (and the reference lines within reach of it): from its best
    down to :data:`_REACH_DOWN` below, up to :data:`_REACH_UP` above, at least
    :data:`_MIN_SPAN` wide."""
    best = min(latencies)
    window = [v for v in latencies + refs if best / _REACH_DOWN <= v <= best * _REACH_UP]
    low, high = min(window), max(window)
    if high / low < _MIN_SPAN:
        middle = math.sqrt(high * low)
        low, high = middle / math.sqrt(_MIN_SPAN), middle * math.sqrt(_MIN_SPAN)
    return low / 1.08, high * 1.08


def _curve_svg(
    curves: dict[str, tuple[tuple[int, float], ...]],
    total: int,
    peak_s: float | None = None,
    untuned_s: float | None = None,
) -> str:
    """The best candidate's latency as the tuner measured it (y, log axis, lower is better)
    against trials measured (x), one step line per task; dashed, when known, the latency this
    machine's peak would give, dotted the kernel before tuning, both named in a key under the
    chart (never on the curve)."""
    points = [p for curve in curves.values() for p in curve if p[1] > 0]
    if not points:
        return ""
    refs = [(kind, v) for kind, v in (("peak", peak_s), ("untuned", untuned_s)) if v]
    width, height = 380, 150 + (14 if refs else 0)
    left, right, top = 64, 10, 10
    plot_w, plot_h = width - left - right, 110
    kept = [lat for curve in curves.values() for lat in _robust(curve)]
    low, high = _y_range(kept, [v for _, v in refs])
    total = max(total, max(n for n, _ in points), 1)
    unit, scale = _axis_unit(high)

    def x(trial: float) -> float:
        return left + plot_w * trial / total

    def y(latency: float) -> float:
        latency = min(max(latency, low), high)
        return top + plot_h * math.log(high / latency) / math.log(high / low)

    text = f'font-size="10" fill="{_INK}"'
    bottom = top + plot_h
    parts = [
        f'<line x1="{left}" y1="{bottom}" x2="{left + plot_w}" y2="{bottom}" '
        f'stroke="{_INK}"/><line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}" '
        f'stroke="{_INK}"/>',
        f'<text x="{left}" y="{bottom + 12}" {text}>0</text>'
        f'<text x="{left + plot_w}" y="{bottom + 12}" text-anchor="end" {text}>{total}</text>'
        f'<text x="{left + plot_w / 2}" y="{bottom + 24}" text-anchor="middle" {text}>'
        "trials measured</text>",
        f'<text x="12" y="{top + plot_h / 2}" text-anchor="middle" {text} '
        f'transform="rotate(-90 12 {top + plot_h / 2})">best candidate</text>',
    ]
    for tick in _log_ticks(low, high):
        parts.append(
            f'<line x1="{left - 3}" y1="{y(tick):.1f}" x2="{left}" y2="{y(tick):.1f}" '
            f'stroke="{_INK}"/><text x="{left - 5}" y="{y(tick) + 3.5:.1f}" text-anchor="end" '
            f'class="mlc-tick" {text}>{_tick_text(tick, unit, scale)}</text>'
        )
    key_x = left
    for kind, value in refs:
        dash = "4 3" if kind == "peak" else "1 3"
        words = "at this machine's fp32 peak" if kind == "peak" else "the kernel before tuning"
        where = ""
        if value < low:
            where = ", below the axis"
        elif value > high:
            where = ", above the axis"
        else:
            parts.append(
                f'<line x1="{left}" y1="{y(value):.1f}" x2="{left + plot_w}" y2="{y(value):.1f}" '
                f'stroke="{_INK}" stroke-dasharray="{dash}"><title>{words}: '
                f"{_latency(value)}</title></line>"
            )
        label = f"{kind} {_latency(value)}{where}"
        parts.append(
            f'<line x1="{key_x}" y1="{height - 7}" x2="{key_x + 16}" y2="{height - 7}" '
            f'stroke="{_INK}" stroke-dasharray="{dash}"/>'
            f'<text x="{key_x + 20}" y="{height - 3}" {text} data-ref="{kind}">'
            f"<title>{words}</title>{html.escape(label)}</text>"
        )
        key_x += 20 + 6 * len(label) + 14
    for i, (task, curve) in enumerate(curves.items()):
        coords, previous = [], None
        for trial, lat in curve:
            if lat <= 0:
                continue
            if previous is not None:  # a step: the best holds until the next improvement
                coords.append(f"{x(trial):.1f},{y(previous):.1f}")
            coords.append(f"{x(trial):.1f},{y(lat):.1f}")
            previous = lat
        colour = _CURVE_COLOURS[i % len(_CURVE_COLOURS)]
        parts.append(
            f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" '
            f'points="{" ".join(coords)}"><title>{html.escape(task)}</title></polyline>'
        )
        cut = [trial for trial, lat in curve if lat > high]
        if cut:  # a candidate above the axis: an arrow at the top edge says the curve goes on
            parts.append(
                f'<text x="{x(cut[0]) + 3:.1f}" y="{top + 9}" {text}>↑ '
                f"{_latency(max(lat for _, lat in curve))}</text>"
            )
    return (
        f'<svg width="{width}" height="{height}" role="img" class="mlc-tune-curve" '
        f'aria-label="best candidate\'s latency, as the tuner measured it, against trials measured" '
        f'style="font-family: var(--jp-ui-font-family, sans-serif)">{"".join(parts)}</svg>'
    )


def _earlier(done: int, before: int, why: bool = False) -> str:
    """``(15 new, 1 earlier)``: how many of the trials this run measured; ``why`` says what the
    earlier ones are (on a first run, the default schedule every search starts from)."""
    if not before:
        return ""
    said = ": the default schedule, past runs" if why else ""
    return f" ({done - before} new, {before} earlier{said})"


def _best(latency: float | None, gflops: float | None, fraction: float | None) -> str:
    """``1.234 ms (170.2 GFLOP/s, 74% of peak)``."""
    extra = [f"{gflops:.1f} GFLOP/s"] if gflops else []
    if fraction:
        extra.append(f"{fraction:.0%} of peak")
    return _latency(latency) + (f" ({', '.join(extra)})" if extra else "")


#: How the GPU candidates' compilers are named to the user.
_COMPILERS = {"nvrtc": "NVRTC (in-process)", "nvcc": "nvcc"}


def progress_text(event: TuneProgress) -> str:
    """One line for a terminal: trials, best kernel (latency, GFLOP/s, % of this machine's
    peak), elapsed, and what is left of the budget; or who the run waits for."""
    if event.waiting:
        return event.waiting_text()
    errors = ""
    if event.build_errors or event.run_errors:
        errors = f", failed: {event.build_errors} build / {event.run_errors} run"
    trials = (
        f"{event.trials_done}/{event.trials_total}" if event.trials_total else event.trials_done
    )
    budget = f" of {_duration(event.time_budget_s)}" if event.time_budget_s else ""
    left = "at most " if event.time_budget_s and not event.trials_total else "~"
    compiler = f", compiled with {_COMPILERS.get(event.compiler, event.compiler)}"
    return (
        f"[{event.task}] {trials} trials{_earlier(event.trials_done, event.resumed_from, True)}, "
        f"best candidate {_best(event.best_latency_s, event.best_gflops, event.peak_fraction)}, "
        f"elapsed {_duration(event.elapsed_s)}{budget}, left {left}{_duration(event.eta_s)}"
        f"{errors}{compiler if event.compiler else ''}"
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
    # the tasks that have a curve (the re-timing at the end reports without one)
    curves = {task: curve for task, curve in (curves or {event.task: event.curve}).items() if curve}
    error = f"<div>first error: {html.escape(event.first_error)}</div>" if event.first_error else ""
    total = event.trials_total or max((p[0] for c in curves.values() for p in c), default=1)
    peak_s = (
        event.best_latency_s * event.peak_fraction
        if event.best_latency_s and event.peak_fraction and len(curves) == 1
        else None
    )  # the latency at which this task's FLOPs would run at the machine's peak
    body = (
        f'<div style="{_BOX}">{bar}<div>{html.escape(progress_text(event))}</div>'
        f"{_curve_svg(curves, total, peak_s)}{error}"
        f"<div>log: <code>{html.escape(event.log_path)}</code></div></div>"
    )
    return {"text/html": body, "text/plain": progress_text(event)}


_STOPPED = {
    "trials": "all trials measured",
    "time": "time budget used",
    "converged": "search converged",
    "searched": "every design space searched through, budget left",
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
    if result.best_gflops and result.kept == "tuned":
        points.append(RooflinePoint("tuned", intensity, result.best_gflops, "tuned"))
    return points


def _cores(result: TuneResult) -> int:
    attrs = getattr(result.target, "attrs", {}) or {}
    return int(attrs["num-cores"]) if "num-cores" in attrs else 1


#: The key columns first (which kernel, how much of the model, before, after, which is kept),
#: so a narrow output shows them before it has to scroll; how the time went after.
_TASK_HEAD = (
    "kernel", "share", "default", "tuned", "kept", "calls", "time", "trials", "new", "reused",
    "shared with",
)  # fmt: skip


def model_task_rows(result: TuneResult) -> list[tuple[str, ...]]:
    """A whole-model tune's table: each kernel's share, latency before and after and which one
    is kept, then the time spent on it, its records (new and reused from earlier runs or other
    models), and the kernels that share its tuning: of the same structure (tuned once, for all
    of them), or epilogue variants of its anchor operator (its decisions replayed on them)."""
    rows = [_TASK_HEAD]
    for t in result.model_tasks:
        tuned_here = t.seconds > 0
        rows.append(
            (
                t.name,
                f"{t.share:.1%}",
                _latency(t.before_s),
                _latency(t.after_s),
                t.kept,
                str(t.calls) if t.calls else "-",
                _duration(t.seconds) if tuned_here else "-",
                str(t.trials) if t.trials else "-",
                str(t.new) if tuned_here else "-",
                str(t.reused) if tuned_here else "-",
                _sharing(t),
            )
        )
    return rows


def _sharing(task: ModelTask) -> str:
    """Which kernels share this one's search: the same structure, or its anchor operator with
    another epilogue (the searched kernel's decisions replayed on them)."""
    parts = [", ".join(task.shared_with)] if task.shared_with else []
    if task.replayed_on:
        parts.append(f"replayed on {', '.join(task.replayed_on)}")
    if task.replayed_from:
        parts.append(f"replays {task.replayed_from}")
    return "; ".join(parts) or "-"


def _aligned(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in rows
    ]


def _spread(timing: Any) -> str:
    """`` ±3%``: how much the runs of a latency varied (empty when unknown)."""
    spread = getattr(timing, "spread", None)
    return f" ±{spread:.0%}" if spread is not None else ""


def _speedup_text(result: TuneResult) -> str:
    """``3.65x``, or ``no measurable change`` when tuned and baseline are within each other's
    spread (a ratio inside the noise would read as a gain or a loss that is not there)."""
    if result.kept == "default build":
        return "none: the default build is kept"
    if not result.speedup:
        return "-"
    if result.measurable is False:
        return f"no measurable change ({result.speedup:.2f}x is within how much the runs vary)"
    return f"{result.speedup:.2f}x"


def _search_best(result: TuneResult) -> float | None:
    """The best candidate's latency as the search measured it (its curve's last point): what
    the progress line showed, a figure of its own beside the result's re-timing."""
    ends = [curve[-1][1] for curve in result.curves.values() if curve]
    return min(ends) if len(ends) == 1 else None


def _model_peak_line(result: TuneResult) -> str:
    """A whole model's arithmetic as a share of the fp32 peak, default and tuned, and how much
    faster the default build's kernels would be at the peak: what is left for a tune to find
    (a model whose default build runs near the peak has little)."""
    default = result.baseline_timing.arithmetic_gflops if result.baseline_timing else None
    if result.kind != "model" or not result.peak_gflops or not default:
        return ""
    peak = result.peak_gflops
    where = "this machine's" if is_cpu(result.target) else "the GPU's"
    tuned = result.timing.arithmetic_gflops if result.kept == "tuned" and result.timing else None
    also = f", the tuned one at {tuned / peak:.0%}" if tuned else ""
    left = (
        f"at the peak, the default build would run {peak / default:.2f}x faster"
        if default < peak
        else "the default build is at the peak already"
    )
    return (
        f"  peak     the default build runs at {default / peak:.0%} of {where} fp32 peak "
        f"({peak:.0f} GFLOP/s, on the products its kernels compute){also}: {left}"
    )


def result_text(result: TuneResult) -> str:
    """The summary a result prints: latencies, % of peak, why it stopped, where the work dir is."""
    return _rows_text(_result_rows(result))


def _result_rows(result: TuneResult) -> Rows:
    """The result's lines (:func:`result_text`), unwrapped."""
    speedup = _speedup_text(result)
    reason = result.stop_reason or ("interrupted" if result.interrupted else "")
    stopped = _STOPPED.get(reason, reason)
    header = f"TuneResult ({result.kind}, {result.n_records} trials" + (
        f", {stopped})" if stopped else ")"
    )
    untuned = "default " if result.kind == "model" else "untuned "
    earlier = result.n_records - result.trials_new
    best = _best(result.best_latency_s, result.best_gflops, result.peak_fraction)
    lines = [header]
    if result.kept == "as written":
        lines += [
            f"  kept     the kernel as written, {best}",
            f"  best     candidate {_latency(result.best_candidate_s)}, slower than the kernel as"
            " written (timed in turns); .trace is its schedule",
        ]
    elif result.kept == "default build":
        lines.append(
            f"  kept     the default build, {best}{_spread(result.timing)}: the tuned model timed "
            "slower, the whole model timed in turns with the default build (see the note)"
        )
    elif result.kind == "model":
        lines.append(f"  tuned    {best}{_spread(result.timing)}, the whole model timed in turns "
                     "with the default build")  # fmt: skip
    else:
        lines.append(f"  tuned    {best}{_spread(result.timing)}, timed as %mlc_time times it")
    searched = _search_best(result)
    if searched is not None and result.kind != "model" and result.kept != "as written":
        lines.append(
            f"  search   best candidate {_latency(searched)} as the tuner's runs timed it "
            "(the progress line's figure)"
        )
    lines += [
        f"  {untuned} {_latency(result.baseline_latency_s)}{_spread(result.baseline_timing)}"
        f"   speed-up {speedup}",
        f"  trials   {result.n_records}"
        + (_earlier(result.n_records, earlier) if earlier else " new")
        + (f" in {_duration(result.elapsed_s)}" if result.elapsed_s else "")
        + (" (earlier: records of runs before, default schedules)" if earlier else ""),
    ]
    peak = _model_peak_line(result)
    if peak:
        lines.append(peak)
    spaces = sorted(set(result.spaces.values()))
    if spaces:
        lines.append(f"  space    {', '.join(spaces)}")
    if result.compiler:
        lines.append(f"  compiler {_COMPILERS.get(result.compiler, result.compiler)}")
    lines.append(f"  work dir {result.work_dir}")
    if result.build_errors or result.run_errors:
        lines.append(
            f"  failed   {result.build_errors} build / {result.run_errors} run; "
            f"first: {result.first_error}"
        )
    if result.rpc:
        lost = (
            f"; {result.rpc_lost} lost during the run (the candidate it was measuring failed, "
            "the others went to the servers left)"
            if result.rpc_lost
            else ""
        )
        lines.append(f"  measured on {_rpc_devices(result.rpc_devices)} {result.rpc}{lost}")
    table: list[str] = []  # the per-kernel table: its rows keep their columns
    if result.model_tasks:
        if result.phases:
            lines.append(
                "  time     "
                + ", ".join(f"{k} {_duration(v)}" for k, v in result.phases.items())
                + (f" of {_duration(result.time_budget_s)}" if result.time_budget_s else "")
            )
        cold = (
            ", its weights flushed from the caches as the model leaves them"
            if result.rpc is None and is_cpu(result.target)
            else ""
        )
        lines.append(
            "  kernels  default and tuned: each kernel per call, timed in turns on the same "
            f"buffers{cold} (a progress line's 'best candidate' is the search's own timing)"
        )
        table = ["  " + line for line in _aligned(model_task_rows(result))]
    after = [f"  note: {note}" for note in result.notes]
    limits = cached_machine_limits() if result.peak_gflops else None
    points = _roofline_points(result)
    if limits is not None and points:
        after += roofline_text(points, limits, _cores(result)).splitlines()
    return (
        [(line, False) for line in lines]
        + [(row, True) for row in table]
        + [(line, False) for line in after]
    )


def result_bundle(result: TuneResult) -> dict[str, str]:
    rows = _result_rows(result)
    peak_s = (
        result.flop / (result.peak_gflops * 1e9)
        if result.flop and result.peak_gflops and result.kind != "model"
        else None
    )
    untuned = result.baseline_latency_s if result.kind != "model" else None
    svg = _curve_svg(dict(result.curves), max(result.n_records, 1), peak_s, untuned)
    limits = cached_machine_limits() if result.peak_gflops else None
    points = _roofline_points(result)
    roof = roofline_svg(points, limits, _cores(result)) if limits is not None and points else ""
    return {
        "text/html": f'<div style="{_BOX}">{_rows_html(rows)}'
        f'<div style="display: flex; gap: 12px; align-items: flex-start">{svg}{roof}</div></div>',
        "text/plain": _rows_text(rows),
    }
