"""Timings and builds as rich output: a table plus an inline SVG bar chart, with a text fallback.

The chart is inline SVG (no image file, no script), so it survives in a saved notebook and on
GitHub / nbviewer; colours follow JupyterLab's theme variables with fallbacks.
"""

from __future__ import annotations

import html
from typing import Any

from ..compilation.targets import describe_target
from ..results import Built, Timing, TimingReport
from .roofline import RooflinePoint, roofline_svg, roofline_text

_BOX = "font-family: var(--jp-code-font-family, monospace); font-size: 12px"
_COLOURS = {"tvm": "var(--jp-brand-color1, #1976d2)", "numpy": "#8d6e63", "torch": "#ef6c00"}


def format_time(seconds: float | None) -> str:
    """``1.234 ms``, ``56.7 us``, ``1.500 s``; ``-`` for none."""
    if seconds is None:
        return "-"
    if seconds >= 1:
        return f"{seconds:.3f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds * 1e6:.1f} us"


def _row(t: Timing, report: TimingReport) -> list[str]:
    ok = {True: "yes", False: "NO", None: "-"}[t.correct]
    cells = [
        t.name,
        format_time(t.median_s),
        format_time(t.mean_s),
        format_time(t.std_s),
        format_time(t.min_s),
        str(t.runs),
        f"{t.gflops:.2f}" if t.gflops else "-",
    ]
    if report.limits is not None:
        fraction = report.peak_fraction(t)
        cells.append(f"{fraction:.0%}" if fraction else "-")
    return [*cells, f"{t.speedup:.2f}x" if t.speedup else "-", ok]


_HEAD = ["variant", "median", "mean", "std", "min", "runs", "GFLOP/s", "speed-up", "correct"]


def _head(report: TimingReport) -> list[str]:
    if report.limits is None:
        return _HEAD
    return [*_HEAD[:7], "% peak", *_HEAD[7:]]


def roofline_points(report: TimingReport) -> list[RooflinePoint]:
    """Each timed variant at its arithmetic intensity and GFLOP/s."""
    return [
        RooflinePoint(t.name, t.intensity, t.gflops, t.kind)
        for t in report.timings
        if t.intensity and t.gflops
    ]


def report_text(report: TimingReport) -> str:
    """The report as an aligned plain-text table (errors and warnings below it), with the
    roofline in words when this machine's limits are known."""
    head = _head(report)
    rows = [head, *[_row(t, report) for t in report.timings]]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)).rstrip() for r in rows]
    target = next((t.target for t in report.timings if t.target), "")
    if target:
        lines.append(f"target: {target}")
    lines += [f"{t.name}: {t.error}" for t in report.timings if t.error]
    lines += [f"warning: {w}" for w in report.warnings]
    points = roofline_points(report)
    if report.limits is not None and points:
        lines.append(roofline_text(points, report.limits, report.cores))
    return "\n".join(lines)


def bar_chart_svg(report: TimingReport, width: int = 420) -> str:
    """Horizontal bars of median time per variant (shorter is faster)."""
    timed = [t for t in report.timings if t.median_s]
    return bars_svg([(t.name, t.median_s, format_time(t.median_s), t.kind) for t in timed], width)


def bars_svg(rows: list[tuple[str, Any, str, str]], width: int = 420, label_w: int = 90) -> str:
    """Horizontal bars, one per ``(label, value, value text, kind)`` row, scaled to the largest.

    ``kind`` picks the colour (``tvm``, ``numpy``, ``torch``).
    """
    rows = [r for r in rows if r[1]]
    if not rows:
        return ""
    longest = max(r[1] for r in rows)
    bar_h = 18
    height = bar_h * len(rows) + 6
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width + label_w + 90}" '
        f'height="{height}" style="{_BOX}">'
    ]
    for i, (label, value, text, kind) in enumerate(rows):
        y = 3 + i * bar_h
        w = max(1.0, width * value / longest)
        colour = _COLOURS.get(kind, _COLOURS["tvm"])
        parts.append(
            f'<text x="{label_w - 4}" y="{y + 12}" text-anchor="end" '
            f'fill="var(--jp-ui-font-color1, #333)">{html.escape(label)}</text>'
            f'<rect x="{label_w}" y="{y}" width="{w:.1f}" height="{bar_h - 4}" fill="{colour}">'
            f"<title>{html.escape(label)}: {html.escape(text)}</title></rect>"
            f'<text x="{label_w + w + 4:.1f}" y="{y + 12}" '
            f'fill="var(--jp-ui-font-color1, #333)">{html.escape(text)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def report_html(report: TimingReport) -> str:
    cell = "padding: 2px 8px; text-align: right"
    head = "".join(f'<th style="{cell}">{h}</th>' for h in _head(report))
    body = []
    for t in report.timings:
        cells = _row(t, report)
        style = cell + ("; color: var(--jp-error-color1, #d32f2f)" if t.correct is False else "")
        body.append(
            "<tr>" + "".join(f'<td style="{style}">{html.escape(c)}</td>' for c in cells) + "</tr>"
        )
    notes = report_text(report).splitlines()[len(report.timings) + 1 :]
    points = roofline_points(report)
    roofline = ""
    if report.limits is not None and points:
        notes = [n for n in notes if not n.startswith(("roofline:", "  "))]
        summary = html.escape(roofline_text(points, report.limits, report.cores))
        roofline = (
            f"{roofline_svg(points, report.limits, report.cores)}"
            f'<pre style="margin: 0; font-size: 11px">{summary}</pre>'
        )
    foot = "".join(f"<div>{html.escape(n)}</div>" for n in notes)
    chart = bar_chart_svg(report) if len(report.timings) > 1 else ""
    return (
        f'<div style="{_BOX}"><table style="border-collapse: collapse"><thead><tr>{head}'
        f"</tr></thead><tbody>{''.join(body)}</tbody></table>{chart}{foot}{roofline}</div>"
    )


def report_bundle(report: TimingReport) -> dict[str, str]:
    return {"text/html": report_html(report), "text/plain": report_text(report)}


def built_text(built: Built, name: str = "") -> str:
    how = "cached, built before" if built.cached else f"built in {built.build_s:.2f} s"
    if getattr(built, "from_disk", False):
        how = "cached on disk, built before"
    if getattr(built, "checked", False):
        how += ", checked (every buffer index is tested at run time)"
    funcs = "; ".join(
        f"{n}({', '.join(p.describe() for p in sig.params)})" for n, sig in built.signatures.items()
    )
    label = f"{name}: " if name else ""
    text = f"{label}{how} for {describe_target(built.target)}\nfunctions: {funcs}"
    if built.device_code is not None:
        text += "\n" + built.device_code.summary()
    return "\n".join([text, *built.notes])


def register_formatters(ipython: Any) -> None:
    """Show timing reports and builds with these renderers."""
    formatters = ipython.display_formatter.formatters
    formatters["text/html"].for_type(TimingReport, report_html)
    formatters["text/plain"].for_type(TimingReport, lambda r, p, cycle: p.text(report_text(r)))
    formatters["text/html"].for_type(Timing, lambda t: report_html(TimingReport((t,))))
    formatters["text/plain"].for_type(
        Timing, lambda t, p, cycle: p.text(report_text(TimingReport((t,))))
    )
    formatters["text/plain"].for_type(Built, lambda b, p, cycle: p.text(built_text(b)))
