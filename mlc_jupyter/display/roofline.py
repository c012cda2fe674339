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


def ceilings_line(
    peak: float, bandwidth: float, cores: int, quiet: bool = True, measured: str = ""
) -> str:
    """``roofline: fp32 peak 473 GFLOP/s (2 cores), bandwidth 28.1 GB/s, ridge at 16.8
    flop/byte``, when and under what load they were ``measured``, and a hint when the machine
    was busy then; ``cores`` 0 for a GPU (one device)."""
    on = f" ({cores} core{'s' if cores > 1 else ''})" if cores > 0 else ""
    return (
        f"roofline: fp32 peak {peak:.0f} GFLOP/s{on}, "
        f"bandwidth {bandwidth:.1f} GB/s, ridge at {peak / bandwidth:.1f} flop/byte"
        + (f" ({measured})" if measured else "")
        + ("" if quiet else " (measured on a busy machine: %mlc_machine --refresh)")
    )


def roofline_text(points: list[RooflinePoint], limits: MachineLimits, cores: int) -> str:
    """The chart in words: the ceilings, then each point's share of the roof above it."""
    peak, bandwidth, _ = _ceilings(limits, cores)
    if not peak or not bandwidth:
        return ""
    ridge = peak / bandwidth
    lines = [ceilings_line(peak, bandwidth, cores, limits.quiet, limits.measured())]
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
    #: the dots' labels placed so far (no label may cover another)
    labels: list[tuple[float, float, float, float]] = field(default_factory=list)

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
            drawn = self.taken + self.labels
            return (0.0 if inside else math.inf) + sum(_overlap(box, o) for o in drawn)

        chosen = min(spots, key=lambda spot: (covered(spot), spots.index(spot)))
        self.taken.append(_box(*chosen, text))
        return chosen


def roofline_svg(
    points: list[RooflinePoint],
    limits: MachineLimits,
    cores: int,
    width: int | None = None,
    height: int = 250,
) -> str:
    """Log-log chart of GFLOP/s against flop per byte, ceilings as lines, one dot per point,
    each labelled by its dot (wider for a race of many variants)."""
    peak, bandwidth, lower = _ceilings(limits, cores)
    shown = [p for p in points if p.intensity > 0 and p.gflops > 0]
    if width is None:
        width = 440 if sum(p.kind != "candidate" for p in shown) <= 3 else 540
    if not peak or not bandwidth:
        return ""
    xs = [p.intensity for p in shown] + [peak / bandwidth]
    ys = [p.gflops for p in shown] + [peak]
    x_lo, x_hi = min(xs) / 4, max(xs) * 4
    y_lo = min(min(ys), bandwidth * x_lo) / 2
    left, top, plot_w, plot_h = 52, 10, width - 64, height - 44
    canvas = _Canvas(x_lo, x_hi, y_lo, peak * 2, (left, top, left + plot_w, top + plot_h))
    parts = [
        f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" '
        f'stroke="{_FAINT}" stroke-width="0.5"/>',
        *_ticks(canvas),
        *_roof(canvas, peak, bandwidth),
    ]
    ceilings = _lower_lines(canvas, lower, bandwidth)
    for line in ceilings:  # labels keep off the dashed lines too
        canvas.taken += _line_boxes((line.x0, line.level), (line.x1, line.level))
    dots, unlabelled = _dots(
        canvas, shown, peak
    )  # before the ceilings' labels: kernels' matter more
    parts += _lower_ceilings(canvas, ceilings) + dots
    parts.append(
        f'<text x="{left + plot_w / 2:.1f}" y="{top + plot_h + 30}" text-anchor="middle" '
        f'fill="{_INK}">arithmetic intensity (flop/byte of arguments)</text>'
        f'<text x="12" y="{top + plot_h / 2:.1f}" text-anchor="middle" fill="{_INK}" '
        f'transform="rotate(-90 12 {top + plot_h / 2:.1f})">GFLOP/s</text>'
    )
    if unlabelled:  # some dot found no room for its label: a key of every dot below the plot
        legend, extra = _legend(shown, peak, height + 2, left, plot_w)
        parts += legend
        height += extra
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height:.0f}" '
        f'role="img" aria-label="roofline chart" style="{_FONT}">'
    )
    return head + "".join(parts) + "</svg>"


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


#: Colours of each kind of variant, the first one the kind's colour in the timing bars; a race
#: with several variants of a kind gives each the next, so colour and marker tell every dot apart.
_KIND_COLOURS = {
    "tvm": ("var(--jp-brand-color1, #1976d2)", "#6a1b9a", "#00838f", "#283593", "#ad1457"),
    "tuned": ("#2e7d32", "#558b2f", "#1b5e20"),
    "numpy": ("#8d6e63", "#5d4037"),
    "torch": ("#ef6c00", "#c62828", "#f9a825"),
    "candidate": ("#9e9e9e",),
}
#: A marker per kind, so two variants of one colour family still differ in shape.
_MARKERS = {"tvm": "circle", "tuned": "diamond", "torch": "square", "numpy": "triangle"}
_RADIUS = 4.5
#: How far (px, from the dot's edge) a label may sit; farther ones get a leader line.
_GAPS = (3.0, 14.0, 28.0, 44.0)


class _Style(NamedTuple):
    colour: str
    marker: str


def _styles(points: list[RooflinePoint]) -> list[_Style]:
    """Each point's colour and marker: the kind's marker, and the kind's next colour (a hollow
    marker once a kind's colours are used up), so no two variants look alike."""
    used: dict[str, int] = {}
    styles = []
    for point in points:
        colours = _KIND_COLOURS.get(point.kind, _KIND_COLOURS["tvm"])
        n = used.get(point.kind, 0)
        used[point.kind] = n + 1
        marker = _MARKERS.get(point.kind, "circle") + ("-hollow" if n >= len(colours) else "")
        styles.append(_Style(colours[n % len(colours)], marker))
    return styles


def _marker(x: float, y: float, style: _Style, radius: float, title: str) -> str:
    """An SVG marker (circle, square, diamond or triangle; filled or hollow) with a tooltip."""
    shape = style.marker.removesuffix("-hollow")
    fill = "none" if style.marker.endswith("-hollow") else style.colour
    paint = (
        f'fill="{fill}" stroke="{style.colour if fill == "none" else "var(--jp-layout-color0, #fff)"}"'
        f' stroke-width="{1.5 if fill == "none" else 0.8}"'
    )
    tip = f"<title>{html.escape(title)}</title>"
    if shape == "square":
        r = radius * 0.85
        return f'<rect x="{x - r:.1f}" y="{y - r:.1f}" width="{2 * r:.1f}" height="{2 * r:.1f}" {paint}>{tip}</rect>'
    if shape in ("diamond", "triangle"):
        r = radius * 1.2
        corners = (
            [(x, y - r), (x + r, y), (x, y + r), (x - r, y)]
            if shape == "diamond"
            else [(x, y - r), (x + r, y + 0.7 * r), (x - r, y + 0.7 * r)]
        )
        at = " ".join(f"{cx:.1f},{cy:.1f}" for cx, cy in corners)
        return f'<polygon points="{at}" {paint}>{tip}</polygon>'
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{radius}" {paint}>{tip}</circle>'


class _Placed(NamedTuple):
    """A dot's label in the plot: its baseline's start, and the leader line's ends (if any)."""

    x: float
    baseline: float
    leader: tuple[float, float, float, float] | None


def _label_spots(dot_x: float, dot_y: float, text: str) -> list[tuple[float, float, float]]:
    """Where a dot's label may go, nearest first, as ``(x, baseline, gap)``: touching the dot
    (beside, above, below, at the diagonals), then farther out to the right and left, a line or
    a few higher or lower (a callout, which gets a leader line), then above and below."""
    w, half = _text_width(text), _LINE / 2
    d = _RADIUS + _GAPS[0]
    lean = d * 0.7
    centres = [
        (dot_x + d + w / 2, dot_y, _GAPS[0]),  # right
        (dot_x - d - w / 2, dot_y, _GAPS[0]),  # left
        (dot_x + lean + w / 2, dot_y - lean - half, _GAPS[0]),  # up right
        (dot_x + lean + w / 2, dot_y + lean + half, _GAPS[0]),  # down right
        (dot_x - lean - w / 2, dot_y - lean - half, _GAPS[0]),  # up left
        (dot_x - lean - w / 2, dot_y + lean + half, _GAPS[0]),  # down left
        (dot_x, dot_y - d - half, _GAPS[0]),  # above
        (dot_x, dot_y + d + half, _GAPS[0]),  # below
    ]
    for gap in _GAPS[1:]:
        d = _RADIUS + gap
        for rows in (0, -1, 1, -2, 2, -3, 3):
            for side in (1, -1):
                centres.append((dot_x + side * (d + w / 2), dot_y + rows * (_LINE + 1), gap))
        centres += [(dot_x, dot_y - d - half, gap), (dot_x, dot_y + d + half, gap)]
    return [(cx - w / 2, cy + half - 2, gap) for cx, cy, gap in centres]


def _distance(point: tuple[float, float], box: tuple[float, ...]) -> float:
    """Pixels from a point to the nearest point of a rectangle (0 inside it)."""
    dx = max(box[0] - point[0], 0.0, point[0] - box[2])
    dy = max(box[1] - point[1], 0.0, point[1] - box[3])
    return math.hypot(dx, dy)


def _leader(dot: tuple[float, float], box: tuple[float, ...]) -> tuple[float, float, float, float]:
    """A line from the dot's edge to the nearest point of its label's box."""
    end_x = min(max(dot[0], box[0]), box[2])
    end_y = min(max(dot[1], box[1]), box[3])
    length = math.hypot(end_x - dot[0], end_y - dot[1]) or 1.0
    start_x = dot[0] + (end_x - dot[0]) * _RADIUS / length
    start_y = dot[1] + (end_y - dot[1]) * _RADIUS / length
    return (start_x, start_y, end_x, end_y)


def _near_segment(point: tuple[float, float], segment: tuple[float, ...]) -> float:
    """Pixels from a point to a line segment."""
    x0, y0, x1, y1 = segment
    length2 = (x1 - x0) ** 2 + (y1 - y0) ** 2 or 1.0
    t = max(0.0, min(1.0, ((point[0] - x0) * (x1 - x0) + (point[1] - y0) * (y1 - y0)) / length2))
    return math.hypot(point[0] - x0 - t * (x1 - x0), point[1] - y0 - t * (y1 - y0))


def _place_label(
    canvas: _Canvas,
    dot: tuple[float, float],
    text: str,
    dots: list[tuple[float, ...]],
    others: list[tuple[float, float]],
) -> _Placed | None:
    """The first spot (nearest first) where ``text`` stays in the plot and covers no dot and no
    label: preferably nearer its own dot than any other (``others``) and off the lines; a
    callout's leader line passes no other dot. ``None`` when no spot near the dot qualifies (the
    legend then names it)."""
    left, top, right, bottom = canvas.frame
    spots = _label_spots(*dot, text)
    for nearest, strict in ((True, True), (True, False), (False, True), (False, False)):
        for x, baseline, gap in spots:
            box = _box(x, baseline, text)
            if box[0] < left + 1 or box[1] < top + 1 or box[2] > right - 1 or box[3] > bottom - 1:
                continue
            if any(_overlap(box, o) for o in canvas.labels + dots):
                continue
            if strict and any(_overlap(box, o) for o in canvas.taken):
                continue
            own = _distance(dot, box)
            if nearest and any(_distance(o, box) <= own + 2 for o in others):
                continue
            leader = _leader(dot, box) if gap > _GAPS[0] else None
            if leader and any(_near_segment(o, leader) < _RADIUS + 1 for o in others):
                continue
            if leader and any(_overlap(b, o) for b in _line_boxes(leader[:2], leader[2:])
                              for o in canvas.labels):  # fmt: skip
                continue
            canvas.labels.append(box)
            if leader:
                canvas.taken += _line_boxes(leader[:2], leader[2:])
            return _Placed(x, baseline, leader)
    return None


def _dots(canvas: _Canvas, shown: list[RooflinePoint], peak: float) -> tuple[list[str], list[int]]:
    """A marker per kernel and, by each but the candidates', a label with its share of the peak:
    beside the dot when there is room, a little farther with a leader line when not. Returns the
    SVG and the points whose label found no room near their dot (the legend then names them)."""
    styles = _styles(shown)
    centres = _dodged([(canvas.x(p.intensity), canvas.y(p.gflops)) for p in shown], shown)
    dots = [
        (x - _RADIUS - 1, y - _RADIUS - 1, x + _RADIUS + 1, y + _RADIUS + 1) for x, y in centres
    ]
    parts = []
    # candidates below, the variants on top (largest first, so a small marker stays visible)
    order = sorted(
        range(len(shown)), key=lambda i: (shown[i].kind != "candidate", -shown[i].gflops)
    )
    for i in order:
        point, (x, y) = shown[i], centres[i]
        radius = 2.5 if point.kind == "candidate" else _RADIUS
        title = (
            f"{point.name}: {point.gflops:.1f} GFLOP/s, {point.gflops / peak:.0%} of peak, "
            f"{point.intensity:.1f} flop/byte"
        )
        parts.append(f'<g data-dot="{i}">{_marker(x, y, styles[i], radius, title)}</g>')
    unlabelled = []

    # the most crowded dots choose first: a dot with neighbours has fewer spots to choose from
    def neighbours(i: int) -> int:
        return sum(math.dist(centres[i], c) < 40 for c in centres)

    for i in sorted(range(len(shown)), key=lambda i: (-neighbours(i), -shown[i].gflops)):
        point = shown[i]
        if point.kind == "candidate":
            continue
        text = f"{point.name} {point.gflops / peak:.0%}"
        others = [c for n, c in enumerate(centres) if n != i and c != centres[i]]
        placed = _place_label(canvas, centres[i], text, dots, others)
        if placed is None:
            unlabelled.append(i)
            continue
        colour = styles[i].colour
        if placed.leader:
            x0, y0, x1, y1 = placed.leader
            parts.append(
                f'<line x1="{x0:.1f}" y1="{y0:.1f}" x2="{x1:.1f}" y2="{y1:.1f}" stroke="{colour}" '
                f'stroke-width="0.8" data-leader-for="{i}"/>'
            )
        parts.append(
            f'<text x="{placed.x:.1f}" y="{placed.baseline:.1f}" fill="{colour}" '
            f'data-label-for="{i}">{html.escape(text)}</text>'
        )
    return parts, unlabelled


def _dodged(
    centres: list[tuple[float, float]], shown: list[RooflinePoint]
) -> list[tuple[float, float]]:
    """Dots that would cover each other moved sideways by a dot's width, in turns right and left
    of their place (variants of one model share its intensity, so they stack in a column):
    every dot stays visible, a few pixels off its intensity at most."""
    step = 2 * _RADIUS + 1.5
    placed: list[tuple[float, float]] = []
    out = list(centres)
    for i in sorted(range(len(centres)), key=lambda i: -shown[i].gflops):
        if shown[i].kind == "candidate":
            continue
        x, y = centres[i]
        for n in range(12):
            shift = step * ((n + 1) // 2) * (1 if n % 2 else -1) if n else 0.0
            if all(abs(x + shift - px) >= step or abs(y - py) >= step for px, py in placed):
                break
        out[i] = (x + shift, y)
        placed.append(out[i])
    return out


def _legend(
    shown: list[RooflinePoint], peak: float, top: float, left: float, width: float
) -> tuple[list[str], float]:
    """Every variant keyed by its colour and marker, in rows under the plot: drawn when some
    dot's label found no room beside it. Returns the SVG and the height it takes."""
    styles = _styles(shown)
    entries = [
        (i, f"{p.name} {p.gflops / peak:.0%}") for i, p in enumerate(shown) if p.kind != "candidate"
    ]
    column = max(_text_width(t) for _, t in entries) + 22
    per_row = max(1, int(width // column))
    parts = []
    for n, (i, text) in enumerate(entries):
        x = left + (n % per_row) * column
        y = top + (n // per_row) * (_LINE + 3) + 8
        parts.append(
            f'<g data-legend-for="{i}">{_marker(x + 5, y - 4, styles[i], _RADIUS, text)}'
            f'<text x="{x + 14:.1f}" y="{y:.1f}" fill="{styles[i].colour}">'
            f"{html.escape(text)}</text></g>"
        )
    rows = math.ceil(len(entries) / per_row)
    return parts, rows * (_LINE + 3) + 6


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
    lines.append(f"{limits.measured()} ({how}); cached in {limits.path}")
    if limits.remeasured:
        lines.append(f"measured again because {limits.remeasured}")
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
