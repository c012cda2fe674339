"""Imported models as rich output: the import summary (HTML with a plain-text fallback)."""

from __future__ import annotations

import html

from ..results import ImportedModel
from .highlight import highlight_html
from .ir import folded_note, without_metadata_note

_BOX = "font-family: var(--jp-code-font-family, monospace); font-size: 12px"


def byte_size(n_bytes: int) -> str:
    """Bytes as people read them: 512 B, 12.3 kB, 1.5 MB."""
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
        f"weights: {_count(s.n_params)} ({byte_size(s.param_bytes)}), {kept}",
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
        code, note = without_metadata_note(script)
        n_lines = code.count("\n") + 1
        folded = " open" if n_lines <= 40 else ""
        body += (
            f'<details{folded} style="{_BOX}"><summary>the Relax module ({n_lines} lines)'
            f"</summary>{highlight_html(code)}{folded_note(note)}</details>"
        )
        plain += "\n\n" + script
    return {"text/html": body, "text/plain": plain}
