"""A Relax build's per-kernel profile as rich output: a table and a bar chart, each kernel on the
machine's roofline (HTML with a plain-text fallback)."""

from __future__ import annotations

import html

from ..measure.profile import KernelProfile, KernelTime
from .roofline import ceilings_line
from .timing import SCROLLS, bars_svg, format_time

_BOX = "font-family: var(--jp-code-font-family, monospace); font-size: 12px"
_CELL = "padding: 1px 8px; text-align: right"
#: Rows a profile shows before folding the rest into one "other kernels" row.
PROFILE_ROWS = 15


def _profile_rows(profile: KernelProfile) -> list[tuple[str, int, float, float, list[str]]]:
    """(name, calls, seconds, share, roofline cells) rows, the slowest first, the tail folded."""
    rows = []
    kernels = list(profile.kernels)
    for k in kernels[:PROFILE_ROWS]:
        rows.append((k.name, k.calls, k.seconds, profile.share(k), _roof_cells(profile, k)))
    whole = profile.kernel_s + profile.beyond_kernels_s
    rest = kernels[PROFILE_ROWS:]
    if rest:
        secs = sum(k.seconds for k in rest)
        calls = sum(k.calls for k in rest)
        rows.append((f"{len(rest)} other kernels", calls, secs, secs / whole, ["-"] * 4))
    if profile.beyond_kernels_s:
        share = profile.beyond_kernels_s / whole
        rows.append((BEYOND_KERNELS, 0, profile.beyond_kernels_s, share, ["-"] * 4))
    return rows


def _roof_cells(profile: KernelProfile, k: KernelTime) -> list[str]:
    """GFLOP/s, flop/byte, bound and % of its roof of one kernel (``-`` where unknown)."""
    bound, share = profile.bound(k), profile.roof_share(k)
    if bound == "memory" and share is not None and share > 1:
        bound = "cache"
    return [
        f"{k.gflops:.1f}" if k.gflops else "-",
        f"{k.intensity:.2f}" if k.intensity else "-",
        bound or "-",
        f"{share:.0%}" if share is not None else "-",
    ]


_PROFILE_HEAD = (
    "kernel",
    "calls",
    "time/run",
    "share",
    "GFLOP/s",
    "flop/byte",
    "bound",
    "% of roof",
)
#: Columns left out when no row has a value (no FLOP count, no machine limits).
_HIDDEN_WHEN_EMPTY = ("GFLOP/s", "flop/byte", "bound", "% of roof")
#: The row of the model's time that its kernels alone do not account for.
BEYOND_KERNELS = "the model beyond its kernels"
_BEYOND_NOTE = (
    f"{BEYOND_KERNELS}: the whole model's time minus its kernels' times alone, that is the VM's "
    "own instructions (allocations, shape checks), and inputs that come from memory in the "
    "model, where alone each kernel finds its input in the cache"
)
_CACHE_NOTE = (
    "cache: memory-bound, yet faster than this machine's memory bandwidth (its arguments stay "
    "in a cache between calls); its % is of the memory roof"
)


def _profile_table(profile: KernelProfile) -> tuple[list[str], list[list[str]]]:
    """The head and cells of the profile's table, without a column empty in every row."""
    rows = [
        [n, str(c) if c else "-", format_time(s), f"{share:.1%}", *cells]
        for n, c, s, share, cells in _profile_rows(profile)
    ]
    keep = [
        i
        for i, head in enumerate(_PROFILE_HEAD)
        if head not in _HIDDEN_WHEN_EMPTY or any(r[i] != "-" for r in rows)
    ]
    return [_PROFILE_HEAD[i] for i in keep], [[r[i] for i in keep] for r in rows]


def _profile_head_lines(profile: KernelProfile) -> list[str]:
    """The title and the roof the kernels are measured against (or why there is none)."""
    title = (
        f"where the time of {profile.name} goes (each kernel call timed alone, median of "
        f"{profile.runs} runs)"
    )
    if profile.ridge is None or not profile.peak_gflops or not profile.bandwidth_gbs:
        return [title, profile.no_roof or "no roof: this machine's limits are unknown"]
    return [
        title,
        ceilings_line(
            profile.peak_gflops,
            profile.bandwidth_gbs,
            profile.cores,
            profile.limits_quiet,
            profile.limits_measured,
        ),
    ]


def _profile_foot_lines(profile: KernelProfile, bounds: list[str]) -> list[str]:
    total = format_time(profile.total_s) if profile.total_s else "-"
    lines = [
        f"sum of kernels {format_time(profile.kernel_s)}; whole model {total} per call "
        "(timed as a whole)"
    ]
    if profile.disturbed:
        lines.append(f"warning: {profile.excess_reason}")
    if profile.beyond_kernels_s:
        lines.append(_BEYOND_NOTE)
    return lines + ([_CACHE_NOTE] if "cache" in bounds else [])


def _bounds(head: list[str], rows: list[list[str]]) -> list[str]:
    return [r[head.index("bound")] for r in rows] if "bound" in head else []


def profile_text(profile: KernelProfile) -> str:
    """The per-kernel profile as an aligned table, with the roof above and the latency below."""
    head, cells = _profile_table(profile)
    rows = [head, *cells]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = [
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in rows
    ]
    foot = _profile_foot_lines(profile, _bounds(head, cells))
    return "\n".join(_profile_head_lines(profile) + lines + foot)


def profile_html(profile: KernelProfile) -> str:
    head, cells = _profile_table(profile)
    head_html = "".join(f'<th style="{_CELL}">{html.escape(h)}</th>' for h in head)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td style="{_CELL}{"; text-align: left" if i == 0 else ""}">{html.escape(c)}</td>'
            for i, c in enumerate(row)
        )
        + "</tr>"
        for row in cells
    )
    chart = bars_svg([(n, s, format_time(s), "tvm") for n, _, s, _, _ in _profile_rows(profile)])
    above = "".join(f"<div>{html.escape(line)}</div>" for line in _profile_head_lines(profile))
    below = "".join(
        f"<div>{html.escape(line)}</div>"
        for line in _profile_foot_lines(profile, _bounds(head, cells))
    )
    return (
        f'<div style="{_BOX}">{above}'
        f'<div style="{SCROLLS}"><table style="border-collapse: collapse"><thead><tr>{head_html}'
        f"</tr></thead><tbody>{body}</tbody></table></div>"
        f'<div style="{SCROLLS}">{chart}</div>{below}</div>'
    )


def profile_bundle(profile: KernelProfile) -> dict[str, str]:
    return {"text/html": profile_html(profile), "text/plain": profile_text(profile)}
