"""Imported models and per-kernel profiles as rich output (HTML with a plain-text fallback)."""

from __future__ import annotations

import html
from typing import Any

from ..measure.profile import KernelProfile, KernelTime
from ..results import ImportedModel
from .highlight import highlight_html
from .roofline import ceilings_line
from .timing import SCROLLS, bars_svg, format_time

_BOX = "font-family: var(--jp-code-font-family, monospace); font-size: 12px"
_CELL = "padding: 1px 8px; text-align: right"
#: Rows a profile shows before folding the rest into one "other kernels" row.
PROFILE_ROWS = 15


def _size(n_bytes: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n_bytes >= scale:
            return f"{n_bytes / scale:.1f} {unit}"
    return f"{n_bytes} B"


def _count(n: int) -> str:
    return f"{n / 1e6:.2f} M" if n >= 1e6 else f"{n / 1e3:.1f} k" if n >= 1e3 else str(n)


#: Kernel names the summary lists before saying how many more there are.
SUMMARY_KERNELS = 6


def _names(names: list[str]) -> str:
    shown = ", ".join(names[:SUMMARY_KERNELS])
    more = len(names) - SUMMARY_KERNELS
    return shown + (f" and {more} more" if more > 0 else "")


def import_text(imported: ImportedModel, name: str = "") -> str:
    """The summary of an import: what came in, its operators, weights and kernels."""
    s = imported.summary
    via = "torch.export" if imported.via == "export" else "fx.symbolic_trace"
    label = f"{name}: " if name else ""
    kept = "constants of the module" if imported.params == "bound" else "parameters of main"
    stages = ", ".join(f"{stage} {secs:.1f} s" for stage, secs in imported.stages)
    lines = [
        f"{label}Relax module of {imported.name} via {via}: "
        f"{', '.join(s.inputs)} -> {', '.join(s.outputs)}",
        f"weights: {_count(s.n_params)} ({_size(s.param_bytes)}), {kept}",
        "operators: " + ", ".join(f"{op} x{n}" for op, n in s.ops),
        f"kernels a build makes ({len(s.kernels)}, after legalising and fusing): "
        + _names([f"{k}" + (f" x{n}" if n > 1 else "") for k, n in s.kernels]),
        f"imported in {imported.import_s:.1f} s ({stages})",
    ]
    lines += [f"warning: {w}" for w in imported.warnings]
    return "\n".join(lines)


def import_bundle(imported: ImportedModel, name: str = "", show_module: bool = True) -> dict:
    """Summary plus the highlighted module (folded when long), with the text as fallback."""
    text = import_text(imported, name)
    rows = "".join(f"<div>{html.escape(line)}</div>" for line in text.splitlines())
    body = f'<div style="{_BOX}">{rows}</div>'
    plain = text
    if show_module:
        script = imported.mod.script()
        n_lines = script.count("\n") + 1
        folded = " open" if n_lines <= 40 else ""
        body += (
            f'<details{folded} style="{_BOX}"><summary>the Relax module ({n_lines} lines)'
            f"</summary>{highlight_html(script)}</details>"
        )
        plain += "\n\n" + script
    return {"text/html": body, "text/plain": plain}


def _profile_rows(profile: KernelProfile) -> list[tuple[str, int, float, float, list[str]]]:
    """(name, calls, seconds, share, roofline cells) rows, the slowest first, the tail folded."""
    rows = []
    kernels = list(profile.kernels)
    for k in kernels[:PROFILE_ROWS]:
        rows.append((k.name, k.calls, k.seconds, profile.share(k), _roof_cells(profile, k)))
    whole = profile.kernel_s + profile.overhead_s
    rest = kernels[PROFILE_ROWS:]
    if rest:
        secs = sum(k.seconds for k in rest)
        calls = sum(k.calls for k in rest)
        rows.append((f"{len(rest)} other kernels", calls, secs, secs / whole, ["-"] * 4))
    if profile.overhead_s:
        share = profile.overhead_s / whole
        rows.append(("VM between kernels", 0, profile.overhead_s, share, ["-"] * 4))
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
_CACHE_NOTE = (
    "cache: memory-bound, yet faster than this machine's memory bandwidth (its arguments stay "
    "in a cache between calls); its % is of the memory roof"
)

_DISTURBED_NOTE = (
    "warning: the kernels took longer than the whole model: the machine was busy during the "
    "profile, so their times read high and their rates low (rerun when it is quiet)"
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
    title = f"where the time of {profile.name} goes (median of {profile.runs} runs)"
    if profile.ridge is None or not profile.peak_gflops or not profile.bandwidth_gbs:
        return [title, profile.no_roof or "no roof: this machine's limits are unknown"]
    return [
        title,
        ceilings_line(
            profile.peak_gflops, profile.bandwidth_gbs, profile.cores, profile.limits_quiet
        ),
    ]


def _profile_foot_lines(profile: KernelProfile, bounds: list[str]) -> list[str]:
    total = format_time(profile.total_s) if profile.total_s else "-"
    lines = [
        f"sum of kernels {format_time(profile.kernel_s)}; whole model {total} per call "
        "(timed without the profiler)"
    ]
    if profile.disturbed:
        lines.append(_DISTURBED_NOTE)
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


def register_formatters(ipython: Any) -> None:
    """Show imported models and profiles with these renderers."""
    formatters = ipython.display_formatter.formatters
    formatters["text/html"].for_type(ImportedModel, lambda m: import_bundle(m)["text/html"])
    formatters["text/plain"].for_type(
        ImportedModel, lambda m, p, cycle: p.text(import_bundle(m)["text/plain"])
    )
    formatters["text/html"].for_type(KernelProfile, profile_html)
    formatters["text/plain"].for_type(KernelProfile, lambda r, p, cycle: p.text(profile_text(r)))
