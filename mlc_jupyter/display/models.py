"""Imported models and per-kernel profiles as rich output (HTML with a plain-text fallback)."""

from __future__ import annotations

import html
from typing import Any

from ..measure.profile import KernelProfile
from ..results import ImportedModel
from .highlight import highlight_html
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


def _profile_rows(profile: KernelProfile) -> list[tuple[str, int, float, float, str]]:
    """(name, calls, seconds, share, GFLOP/s and % of peak) rows, the slowest first, the tail
    folded."""
    rows = []
    kernels = list(profile.kernels)
    for k in kernels[:PROFILE_ROWS]:
        gflops = f"{k.gflops:.1f}" if k.gflops else "-"
        if k.gflops and profile.peak_gflops:
            gflops += f" ({k.gflops / profile.peak_gflops:.0%} of peak)"
        rows.append((k.name, k.calls, k.seconds, profile.share(k), gflops))
    rest = kernels[PROFILE_ROWS:]
    if rest:
        secs = sum(k.seconds for k in rest)
        whole = profile.kernel_s + profile.overhead_s
        calls = sum(k.calls for k in rest)
        rows.append((f"{len(rest)} other kernels", calls, secs, secs / whole, "-"))
    if profile.overhead_s:
        whole = profile.kernel_s + profile.overhead_s
        rows.append(("VM between kernels", 0, profile.overhead_s, profile.overhead_s / whole, "-"))
    return rows


_PROFILE_HEAD = ("kernel", "calls", "time/run", "share", "GFLOP/s (fp32 peak share)")


def profile_text(profile: KernelProfile) -> str:
    """The per-kernel profile as an aligned table with the model's latency below."""
    rows = [_PROFILE_HEAD] + [
        (n, str(c) if c else "-", format_time(s), f"{share:.1%}", g)
        for n, c, s, share, g in _profile_rows(profile)
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(len(_PROFILE_HEAD))]
    lines = [
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in rows
    ]
    total = format_time(profile.total_s) if profile.total_s else "-"
    lines.insert(0, f"where the time of {profile.name} goes (mean of {profile.runs} runs)")
    lines.append(
        f"sum of kernels {format_time(profile.kernel_s)}; whole model {total} per call "
        "(timed without the profiler)"
    )
    return "\n".join(lines)


def profile_html(profile: KernelProfile) -> str:
    rows = _profile_rows(profile)
    head = "".join(f'<th style="{_CELL}">{h}</th>' for h in _PROFILE_HEAD)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td style="{_CELL}{"; text-align: left" if i == 0 else ""}">{html.escape(c)}</td>'
            for i, c in enumerate((n, str(c) if c else "-", format_time(s), f"{share:.1%}", g))
        )
        + "</tr>"
        for n, c, s, share, g in rows
    )
    chart = bars_svg([(n, s, format_time(s), "tvm") for n, _, s, _, _ in rows])
    lines = profile_text(profile).splitlines()
    return (
        f'<div style="{_BOX}"><div>{html.escape(lines[0])}</div>'
        f'<div style="{SCROLLS}"><table style="border-collapse: collapse"><thead><tr>{head}'
        f"</tr></thead><tbody>{body}</tbody></table></div>"
        f'<div style="{SCROLLS}">{chart}</div><div>{html.escape(lines[-1])}</div></div>'
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
