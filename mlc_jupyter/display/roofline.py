"""The roofline chart (Williams, Waterman and Patterson, 2009): how far each kernel is from the
limit this machine puts on it.

A kernel doing ``F`` flop over arguments of ``B`` bytes has arithmetic intensity ``F / B``; it
cannot run faster than ``min(peak, bandwidth x intensity)``. The chart puts each variant at its
intensity and measured GFLOP/s under the two ceilings, on log-log axes, as inline SVG (it survives
in a saved notebook); :func:`roofline_text` says the same in a few lines.
"""

from __future__ import annotations

import html
import itertools
import math
from dataclasses import dataclass, field
from typing import NamedTuple

from ..measure.machine import MachineLimits
from .highlight import PLAIN_PRE

_FONT = "font-family: var(--jp-code-font-family, monospace); font-size: 11px"
_INK = "var(--jp-ui-font-color1, #333)"
_FAINT = "var(--jp-ui-font-color2, #888)"
_COLOURS = {
    "tvm": "var(--jp-brand-color1, #1976d2)",
    "tuned": "#2e7d32",
    "numpy": "#8d6e63",
    "torch": "#ef6c00",
    "candidate": "#9e9e9e",
}


@dataclass(frozen=True)
class RooflinePoint:
    """One kernel on the chart: its name, flop per byte of its arguments, and GFLOP/s."""

    name: str
    intensity: float
    gflops: float
    kind: str = "tvm"


def _ceilings(limits: MachineLimits, cores: int) -> tuple[float, float, list[tuple[str, float]]]:
    """The peak, the bandwidth, and the lower compute ceilings worth a line (narrower vectors,
    one core)."""
    peak = limits.peak(cores) or 0.0
    bandwidth = limits.bandwidth(cores) or 0.0
    widths = limits.peak_gflops.get(max(c for c in limits.peak_gflops if c <= cores), {})
    lower = []
    for bits in sorted(widths, reverse=True):
        value = widths[bits]
        if value < 0.9 * peak and all(abs(value - v) > 0.1 * v for _, v in lower):
            lower.append((f"{bits}-bit", value))
    one_core = limits.peak(1)
    if cores > 1 and one_core and one_core < 0.9 * peak:
        near = [n for n, (_, v) in enumerate(lower) if abs(one_core - v) <= 0.1 * v]
        if near:
            lower[near[0]] = (f"{lower[near[0]][0]} or 1 core", lower[near[0]][1])
        else:
            lower.append(("1 core", one_core))
    return peak, bandwidth, lower


def ceilings_line(peak: float, bandwidth: float, cores: int, quiet: bool = True) -> str:
    """``roofline: fp32 peak 473 GFLOP/s (2 cores), bandwidth 28.1 GB/s, ridge at 16.8
    flop/byte``, and a hint when the limits were measured on a busy machine; ``cores`` 0 for a
    GPU (one device)."""
    on = f" ({cores} core{'s' if cores > 1 else ''})" if cores > 0 else ""
    return (
        f"roofline: fp32 peak {peak:.0f} GFLOP/s{on}, "
        f"bandwidth {bandwidth:.1f} GB/s, ridge at {peak / bandwidth:.1f} flop/byte"
        + ("" if quiet else " (measured on a busy machine: %mlc_machine --refresh)")
    )


def roofline_text(points: list[RooflinePoint], limits: MachineLimits, cores: int) -> str:
    """The chart in words: the ceilings, then each point's share of the roof above it."""
    peak, bandwidth, _ = _ceilings(limits, cores)
    if not peak or not bandwidth:
        return ""
    ridge = peak / bandwidth
    lines = [ceilings_line(peak, bandwidth, cores, limits.quiet)]
    for point in points:
        roof = limits.roof(point.intensity, cores) or peak
        bound = "compute-bound" if point.intensity >= ridge else "memory-bound"
        lines.append(
            f"  {point.name}: {point.intensity:.1f} flop/byte, {point.gflops:.1f} GFLOP/s = "
            f"{point.gflops / peak:.0%} of peak, {point.gflops / roof:.0%} of its roof ({bound})"
        )
    return "\n".join(lines)


@dataclass
class _Canvas:
    """The chart's log-log axes in pixels, and the rectangles already drawn on (for labels)."""

    x_lo: float
    x_hi: float
    y_lo: float
    y_hi: float
    frame: tuple[float, float, float, float]  # the plot's left, top, right, bottom
    taken: list[tuple[float, float, float, float]] = field(default_factory=list)

    def x(self, value: float) -> float:
        left, _, right, _ = self.frame
        return left + (right - left) * math.log(value / self.x_lo) / math.log(self.x_hi / self.x_lo)

    def y(self, value: float) -> float:
        _, top, _, bottom = self.frame
        share = math.log(value / self.y_lo) / math.log(self.y_hi / self.y_lo)
        return top + (bottom - top) * (1 - share)

    def claim(self, spots: list[tuple[float, float]], text: str) -> tuple[float, float]:
        """The first spot where ``text`` stays inside the plot and covers nothing drawn, else the
        inside spot covering least; its rectangle is then taken."""

        def covered(spot: tuple[float, float]) -> float:
            box = _box(*spot, text)
            left, top, right, bottom = self.frame
            inside = box[0] >= left and box[1] >= top and box[2] <= right and box[3] <= bottom
            return (0.0 if inside else math.inf) + sum(_overlap(box, o) for o in self.taken)

        chosen = min(spots, key=lambda spot: (covered(spot), spots.index(spot)))
        self.taken.append(_box(*chosen, text))
        return chosen


def roofline_svg(
    points: list[RooflinePoint],
    limits: MachineLimits,
    cores: int,
    width: int = 440,
    height: int = 250,
) -> str:
    """Log-log chart of GFLOP/s against flop per byte, ceilings as lines, one dot per point."""
    peak, bandwidth, lower = _ceilings(limits, cores)
    shown = [p for p in points if p.intensity > 0 and p.gflops > 0]
    if not peak or not bandwidth:
        return ""
    xs = [p.intensity for p in shown] + [peak / bandwidth]
    ys = [p.gflops for p in shown] + [peak]
    x_lo, x_hi = min(xs) / 4, max(xs) * 4
    y_lo = min(min(ys), bandwidth * x_lo) / 2
    left, top, plot_w, plot_h = 52, 10, width - 64, height - 44
    canvas = _Canvas(x_lo, x_hi, y_lo, peak * 2, (left, top, left + plot_w, top + plot_h))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img" aria-label="roofline chart" style="{_FONT}">',
        f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" '
        f'stroke="{_FAINT}" stroke-width="0.5"/>',
        *_ticks(canvas),
        *_roof(canvas, peak, bandwidth),
    ]
    ceilings = _lower_lines(canvas, lower, bandwidth)
    for line in ceilings:  # labels keep off the dashed lines too
        canvas.taken += _line_boxes((line.x0, line.level), (line.x1, line.level))
    dots = _dots(canvas, shown, peak)  # before the ceilings' labels: kernels' labels matter more
    parts += _lower_ceilings(canvas, ceilings) + dots
    parts.append(
        f'<text x="{left + plot_w / 2:.1f}" y="{height - 4}" text-anchor="middle" '
        f'fill="{_INK}">arithmetic intensity (flop/byte of arguments)</text>'
        f'<text x="12" y="{top + plot_h / 2:.1f}" text-anchor="middle" fill="{_INK}" '
        f'transform="rotate(-90 12 {top + plot_h / 2:.1f})">GFLOP/s</text></svg>'
    )
    return "".join(parts)


def _roof(canvas: _Canvas, peak: float, bandwidth: float) -> list[str]:
    """The bandwidth slope and the peak, with their labels (which labels then keep off)."""
    x, y = canvas.x, canvas.y
    corners = [
        (x(canvas.x_lo), y(max(bandwidth * canvas.x_lo, canvas.y_lo))),
        (x(min(peak / bandwidth, canvas.x_hi)), y(peak)),
        (x(canvas.x_hi), y(peak)),
    ]
    peak_label, bandwidth_label = f"peak {peak:.0f} GFLOP/s", f"{bandwidth:.0f} GB/s"
    peak_at = (corners[2][0] - 4 - _text_width(peak_label), corners[2][1] - 4)
    bandwidth_at = (corners[0][0] + 4, corners[0][1] - 6)
    canvas.taken += _line_boxes(*corners)
    canvas.taken += [_box(*peak_at, peak_label), _box(*bandwidth_at, bandwidth_label)]
    return [
        f'<polyline fill="none" stroke="{_INK}" stroke-width="1.5" points="'
        + " ".join(f"{cx:.1f},{cy:.1f}" for cx, cy in corners)
        + f'"><title>{bandwidth:.1f} GB/s and {peak:.0f} GFLOP/s</title></polyline>',
        f'<text x="{corners[2][0] - 4:.1f}" y="{peak_at[1]:.1f}" text-anchor="end" '
        f'fill="{_INK}">{peak_label}</text>',
        f'<text x="{bandwidth_at[0]:.1f}" y="{bandwidth_at[1]:.1f}" '
        f'fill="{_INK}">{bandwidth_label}</text>',
    ]


def _dots(canvas: _Canvas, shown: list[RooflinePoint], peak: float) -> list[str]:
    """A dot per kernel, and a label with its share of the peak beside each but the candidates
    (placed once every dot is drawn, so that no label covers a dot)."""
    for point in shown:
        dot_x, dot_y = canvas.x(point.intensity), canvas.y(point.gflops)
        canvas.taken.append((dot_x - 5, dot_y - 5, dot_x + 5, dot_y + 5))
    parts = []
    for point in sorted(shown, key=lambda p: -p.gflops):
        colour = _COLOURS.get(point.kind, _COLOURS["tvm"])
        share = point.gflops / peak
        radius = 2.5 if point.kind == "candidate" else 4
        dot_x, dot_y = canvas.x(point.intensity), canvas.y(point.gflops)
        parts.append(
            f'<circle cx="{dot_x:.1f}" cy="{dot_y:.1f}" r="{radius}" '
            f'fill="{colour}"><title>{html.escape(point.name)}: {point.gflops:.1f} GFLOP/s, '
            f"{share:.0%} of peak, {point.intensity:.1f} flop/byte</title></circle>"
        )
        if point.kind != "candidate":
            text = f"{point.name} {share:.0%}"
            at = canvas.claim(_beside(dot_x, dot_y, text), text)
            parts.append(
                f'<text x="{at[0]:.1f}" y="{at[1]:.1f}" fill="{colour}">{html.escape(text)}</text>'
            )
    return parts


class _CeilingLine(NamedTuple):
    """A lower compute ceiling inside the plot: its label, GFLOP/s, and its dashed line's pixels
    (from the bandwidth slope to the right edge, at its height)."""

    label: str
    value: float
    x0: float
    x1: float
    level: float


def _lower_lines(
    canvas: _Canvas, lower: list[tuple[str, float]], bandwidth: float
) -> list[_CeilingLine]:
    """The lower compute ceilings that fall inside the plot."""
    lines = []
    for label, value in lower:
        start = value / bandwidth
        if canvas.x_lo < start < canvas.x_hi and canvas.y_lo < value < canvas.y_hi:
            x0, x1 = canvas.x(start), canvas.x(canvas.x_hi)
            lines.append(_CeilingLine(label, value, x0, x1, canvas.y(value)))
    return lines


def _lower_ceilings(canvas: _Canvas, lines: list[_CeilingLine]) -> list[str]:
    """A dashed line per lower compute ceiling, labelled just above or below it."""
    parts = []
    for label, value, x0, x1, level in lines:
        text = f"{label} {value:.0f}"
        along = [x0 + 4 + (x1 - 8 - _text_width(text) - x0) * i / 8 for i in range(9)]
        at = canvas.claim([(a, level + 11) for a in along] + [(a, level - 3) for a in along], text)
        wording = html.escape(label.replace("-bit", "-bit vectors"))
        parts.append(
            f'<line x1="{x0:.1f}" y1="{level:.1f}" x2="{x1:.1f}" y2="{level:.1f}" '
            f'stroke="{_FAINT}" stroke-dasharray="4 3"><title>fp32 peak with {wording}: '
            f"{value:.0f} GFLOP/s</title></line>"
            f'<text x="{at[0]:.1f}" y="{at[1]:.1f}" fill="{_FAINT}">{html.escape(text)}</text>'
        )
    return parts


_CHAR_WIDTH = 6.7  # an 11px monospace glyph's advance, for keeping labels apart
_LINE = 12


def _text_width(text: str) -> float:
    return _CHAR_WIDTH * len(text)


def _box(x: float, baseline: float, text: str) -> tuple[float, float, float, float]:
    """The rectangle a left-anchored label covers: left, top, right, bottom."""
    return (x, baseline - _LINE + 2, x + _text_width(text), baseline + 2)


def _overlap(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    """The area two rectangles share (0 when apart)."""
    return max(0.0, min(a[2], b[2]) - max(a[0], b[0])) * max(0.0, min(a[3], b[3]) - max(a[1], b[1]))


def _line_boxes(*corners: tuple[float, float]) -> list[tuple[float, float, float, float]]:
    """Thin rectangles along a polyline, so that labels keep off the roof."""
    boxes = []
    for (x0, y0), (x1, y1) in itertools.pairwise(corners):
        steps = max(1, math.ceil(abs(x1 - x0) / 4))
        for i in range(steps + 1):
            px, py = x0 + (x1 - x0) * i / steps, y0 + (y1 - y0) * i / steps
            boxes.append((px - 2, py - 1, px + 2, py + 1))
    return boxes


def _beside(dot_x: float, dot_y: float, text: str) -> list[tuple[float, float]]:
    """Where a point's label may go, best first: right of its dot, a line lower or higher, then
    left of the dot."""
    spots = []
    for step in (0, 1, -1, 2, -2, 3, -3):
        baseline = dot_y + 4 + step * _LINE
        spots += [(dot_x + 6, baseline), (dot_x - 6 - _text_width(text), baseline)]
    return spots


def _decades(lo: float, hi: float) -> list[float]:
    """The powers of ten between ``lo`` and ``hi``: where a log axis gets its ticks."""
    exponents = range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
    return [10.0**e for e in exponents if lo <= 10.0**e <= hi]


def _ticks(canvas: _Canvas) -> list[str]:
    """Decade ticks on both log axes."""
    left, _, _, bottom = canvas.frame
    below = [
        f'<text x="{canvas.x(value):.1f}" y="{bottom + 12}" text-anchor="middle" '
        f'fill="{_FAINT}">{value:g}</text>'
        for value in _decades(canvas.x_lo, canvas.x_hi)
    ]
    beside = [
        f'<text x="{left - 4}" y="{canvas.y(value) + 4:.1f}" text-anchor="end" '
        f'fill="{_FAINT}">{value:g}</text>'
        for value in _decades(canvas.y_lo, canvas.y_hi)
    ]
    return below + beside


def limits_text(limits: MachineLimits) -> str:
    """This machine's limits as a small table, with where they are cached and how to redo them."""
    if limits.is_gpu:
        return _gpu_limits_text(limits)
    widths = sorted({b for w in limits.peak_gflops.values() for b in w})
    head = "cores  " + "  ".join(f"{b}-bit".rjust(9) for b in widths) + "   bandwidth"
    lines = [f"{limits.machine}", "fp32 peak, GFLOP/s by vector width:", head]
    for cores in sorted(limits.peak_gflops):
        row = limits.peak_gflops[cores]
        cells = "  ".join(f"{row[b]:9.1f}" if b in row else " " * 9 for b in widths)
        bandwidth = limits.bandwidth_gbs.get(cores)
        lines.append(f"{cores:5d}  {cells}   " + (f"{bandwidth:.1f} GB/s" if bandwidth else "-"))
    how = "read from the cache" if limits.cached else f"measured in {limits.seconds:.1f} s"
    lines.append(f"measured {limits.measured_at} ({how}); cached in {limits.path}")
    if not limits.quiet:
        lines.append(
            "other programs were running while it was measured, so figures may read low: "
            "run %mlc_machine --refresh on a quiet machine"
        )
    return "\n".join(lines)


def _gpu_limits_text(limits: MachineLimits) -> str:
    """A GPU's three figures (one device: no core counts or vector widths)."""
    how = "read from the cache" if limits.cached else f"measured in {limits.seconds:.1f} s"
    return "\n".join([
        limits.machine,
        f"fp32 FMA peak:        {limits.peak() or 0:10.1f} GFLOP/s",
        f"tensor cores (fp16 mma.sync, fp32 accumulate): {limits.tensor_gflops or 0:.1f} GFLOP/s",
        f"memory bandwidth:     {limits.bandwidth() or 0:10.1f} GB/s",
        f"measured {limits.measured_at} ({how}); cached in {limits.path}",
    ])  # fmt: skip


def limits_bundle(limits: MachineLimits) -> dict[str, str]:
    """The table and the machine's roofline (its ceilings, no kernels yet)."""
    text = limits_text(limits)
    chart = roofline_svg([], limits, limits.cores)
    return {
        "text/html": f'<div style="{_FONT}"><pre style="{PLAIN_PRE}">{html.escape(text)}</pre>'
        f"{chart}</div>",
        "text/plain": text,
    }
