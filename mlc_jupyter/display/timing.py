"""Timings as rich output: a table plus an inline SVG bar chart, with a text fallback.

The chart is inline SVG (no image file, no script), so it survives in a saved notebook and on
GitHub / nbviewer; colours follow JupyterLab's theme variables with fallbacks.
"""

from __future__ import annotations

import html
from typing import Any

from ..measure.compare import TimingReport
from ..measure.timer import Timing
from .highlight import PLAIN_PRE
from .roofline import RooflinePoint, roofline_svg, roofline_text

#: A box that scrolls sideways when the cell is narrower than a table or chart (never clips it).
SCROLLS = "overflow-x: auto; max-width: 100%"
_BOX = "font-family: var(--jp-code-font-family, monospace); font-size: 12px"
_COLOURS = {
    "tvm": "var(--jp-brand-color1, #1976d2)",
    "numpy": "#8d6e63",
    "torch": "#ef6c00",
    "onnxruntime": "#7b1fa2",
    "openvino": "#00897b",
}


def format_time(seconds: float | None) -> str:
    """``1.234 ms``, ``56.7 us``, ``1.500 s``; ``-`` for none."""
    if seconds is None:
        return "-"
    if seconds >= 1:
        return f"{seconds:.3f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds * 1e6:.1f} us"


def _spread(t: Timing) -> str:
    """Run-to-run variation as ``±4%`` (standard deviation over median)."""
    return f"±{t.spread:.0%}" if t.spread is not None else "-"


def _row(t: Timing, report: TimingReport) -> list[str]:
    ok = {True: "yes", False: "NO", None: "-"}[t.correct]
    fraction = report.peak_fraction(t) if report.limits is not None else None
    return [
        t.name,
        t.device or "-",
        format_time(t.median_s),
        _spread(t),
        format_time(t.mean_s),
        format_time(t.min_s),
        str(t.runs),
        f"{t.gflops:.2f}" if t.gflops else "-",
        f"{fraction:.0%}" if fraction else "-",
        f"{t.speedup:.2f}x" if t.speedup else "-",
        ok,
    ]


#: Columns left out when no row has a value (a kernel TVM cannot count the FLOPs of).
_HIDDEN_WHEN_EMPTY = ("±", "GFLOP/s", "% peak")
_HEAD = [
    "variant",
    "device",
    "median",
    "±",
    "mean",
    "min",
    "runs",
    "GFLOP/s",
    "% peak",
    "speed-up",
    "correct",
]


def table(report: TimingReport) -> tuple[list[str], list[list[str]]]:
    """The head and rows of the report's table, without a rate column empty in every row."""
    rows = [_row(t, report) for t in report.timings]
    # the device column appears when some row ran off the CPU (a GPU race names each row's)
    off_cpu = any(t.device not in ("", "cpu") for t in report.timings)
    keep = [
        i
        for i, head in enumerate(_HEAD)
        if (head != "device" or off_cpu)
        and (head not in _HIDDEN_WHEN_EMPTY or any(r[i] != "-" for r in rows))
    ]
    return [_HEAD[i] for i in keep], [[r[i] for i in keep] for r in rows]


def roofline_points(report: TimingReport) -> list[RooflinePoint]:
    """Each timed variant at its arithmetic intensity and GFLOP/s."""
    return [
        RooflinePoint(t.name, t.intensity, t.gflops, t.kind)
        for t in report.timings
        if t.intensity and t.gflops
    ]


def _foot(report: TimingReport) -> list[str]:
    """The lines below the table: target, errors, warnings, then notes."""
    target = next((t.target for t in report.timings if t.target), "")
    lines = [f"target: {target}"] if target else []
    lines += [f"{t.name}: {t.error}" for t in report.timings if t.error]
    lines += [f"warning: {w}" for w in report.warnings]
    return lines + [f"note: {n}" for n in report.notes]


def report_text(report: TimingReport) -> str:
    """The report as an aligned plain-text table (errors, warnings and notes below it), with
    the roofline in words when this machine's limits are known."""
    head, body = table(report)
    rows = [head, *body]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)).rstrip() for r in rows]
    lines += _foot(report)
    points = roofline_points(report)
    if report.limits is not None and points:
        lines.append(roofline_text(points, report.limits, report.cores))
    return "\n".join(lines)


def bar_chart_svg(report: TimingReport, width: int = 420) -> str:
    """Horizontal bars of median time per variant (shorter is faster)."""
    timed = [t for t in report.timings if t.median_s]
    return bars_svg([(t.name, t.median_s, format_time(t.median_s), t.kind) for t in timed], width)


#: Width of one character of the charts' 12 px monospace labels, and the widest label column.
CHAR_PX, MAX_LABEL_PX = 7.3, 340


def elide_middle(text: str, chars: int) -> str:
    """``text`` cut to ``chars`` characters by an ellipsis in the middle, both ends kept (a
    kernel's name differs at its end, a wrapper's at its start)."""
    if len(text) <= chars:
        return text
    head = chars // 2
    return text[:head] + "…" + text[len(text) - (chars - 1 - head) :]


def bars_svg(rows: list[tuple[str, Any, str, str]], width: int = 420) -> str:
    """Horizontal bars, one per ``(label, value, value text, kind)`` row, scaled to the largest.

    The label column is as wide as the longest label, up to :data:`MAX_LABEL_PX`; a longer
    label is elided in the middle and carries the full name as its tooltip. ``kind`` picks the
    colour (``tvm``, ``numpy``, ``torch``).
    """
    rows = [r for r in rows if r[1]]
    if not rows:
        return ""
    fit = int(MAX_LABEL_PX // CHAR_PX)
    label_w = round(min(MAX_LABEL_PX, CHAR_PX * max(len(r[0]) for r in rows))) + 8
    value_w = round(CHAR_PX * max(len(r[2]) for r in rows)) + 8
    longest = max(r[1] for r in rows)
    bar_h = 18
    height = bar_h * len(rows) + 6
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width + label_w + value_w}" '
        f'height="{height}" style="{_BOX}; max-width: none" class="mlc-bars">'
    ]
    for i, (label, value, text, kind) in enumerate(rows):
        y = 3 + i * bar_h
        w = max(1.0, width * value / longest)
        colour = _COLOURS.get(kind, _COLOURS["tvm"])
        full = html.escape(label)
        parts.append(
            f'<text x="{label_w - 4}" y="{y + 12}" text-anchor="end" '
            f'fill="var(--jp-ui-font-color1, #333)"><title>{full}</title>'
            f"{html.escape(elide_middle(label, fit))}</text>"
            f'<rect x="{label_w}" y="{y}" width="{w:.1f}" height="{bar_h - 4}" fill="{colour}">'
            f"<title>{full}: {html.escape(text)}</title></rect>"
            f'<text x="{label_w + w + 4:.1f}" y="{y + 12}" '
            f'fill="var(--jp-ui-font-color1, #333)">{html.escape(text)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def report_html(report: TimingReport) -> str:
    cell = "padding: 2px 8px; text-align: right; white-space: nowrap"
    head_row, rows = table(report)
    head = "".join(f'<th style="{cell}">{html.escape(h)}</th>' for h in head_row)
    body = []
    for t, cells in zip(report.timings, rows, strict=True):
        style = cell + ("; color: var(--jp-error-color1, #d32f2f)" if t.correct is False else "")
        body.append(
            "<tr>" + "".join(f'<td style="{style}">{html.escape(c)}</td>' for c in cells) + "</tr>"
        )
    notes = _foot(report)
    points = roofline_points(report)
    roofline = ""
    if report.limits is not None and points:
        summary = html.escape(roofline_text(points, report.limits, report.cores))
        roofline = (
            f"{roofline_svg(points, report.limits, report.cores)}"
            f'<pre style="{PLAIN_PRE}; font-size: 11px">{summary}</pre>'
        )
    foot = "".join(f"<div{_note_style(n)}>{html.escape(n)}</div>" for n in notes)
    chart = bar_chart_svg(report) if len(report.timings) > 1 else ""
    return (
        f'<div style="{_BOX}"><div style="{SCROLLS}"><table style="border-collapse: collapse">'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
        f'<div style="{SCROLLS}">{chart}</div>{foot}{roofline}</div>'
    )


def _note_style(line: str) -> str:
    """Warnings in the theme's warning colour; notes and the target dimmed."""
    if line.startswith("warning:"):
        return ' style="color: var(--jp-warn-color0, #b45309)"'
    return ' style="opacity: 0.7"'


def report_bundle(report: TimingReport) -> dict[str, str]:
    return {"text/html": report_html(report), "text/plain": report_text(report)}


#: The report ``%mlc_time -o`` last showed, and the cell (execution count) that showed it.
_shown: list[Any] = [None, None]


def mark_shown(report: TimingReport, execution_count: int) -> None:
    """Remember that ``%mlc_time -o`` already showed ``report`` in this cell.

    Like ``%timeit -o``, whose result displays as one line after its printed summary: the same
    cell then shows the returned report as a one-line summary, not its table a second time.
    """
    _shown[:] = [report, execution_count]


def shown_above(report: TimingReport, execution_count: int) -> bool:
    """Whether ``%mlc_time -o`` already showed ``report`` in the cell now running."""
    return _shown[0] is report and _shown[1] == execution_count


def summary_line(report: TimingReport) -> str:
    """``<TimingReport: 3 variants, fastest f 12.3 us (table above)>``."""
    timed = [t for t in report.timings if t.median_s is not None]
    best = min(timed, key=lambda t: t.median_s) if timed else None
    fastest = f", fastest {best.name} {format_time(best.median_s)}" if best else ""
    return f"<TimingReport: {len(report.timings)} variants{fastest} (table above)>"
