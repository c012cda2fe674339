"""The cache's parts and what clearing removed, as ``%mlc_cache`` shows them."""

from __future__ import annotations

import html

from ..caches import CacheCleared, CacheInfo
from .models import byte_size
from .timing import SCROLLS

_BOX = "font-family: var(--jp-code-font-family, monospace); font-size: 12px"
_CELL = "padding: 1px 10px 1px 0; text-align: left; vertical-align: top"
_HOW = (
    "%mlc_cache --clear builds|kernels|logs|memory|all clears a part (all: every part but tune); "
    "--clear tune removes the tuning records"
)


def _rows(info: CacheInfo) -> list[tuple[str, str, str, str, str]]:
    return [
        (p.name, f"{p.count} {p.unit}", byte_size(p.size_bytes), p.path, p.note) for p in info.parts
    ]


def _head(info: CacheInfo) -> list[str]:
    return [
        f"cache: {info.root} ({byte_size(info.size_bytes)} on disk)",
        f"set by {info.configured_by}",
    ]


def cache_info_text(info: CacheInfo) -> str:
    rows = _rows(info)
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(r[:4], widths, strict=True)).rstrip()
        + (f"  ({r[4]})" if r[4] else "")
        for r in rows
    ]
    return "\n".join([*_head(info), *lines, _HOW])


def cache_info_html(info: CacheInfo) -> str:
    body = "".join(
        "<tr>" + "".join(f'<td style="{_CELL}">{html.escape(c)}</td>' for c in row) + "</tr>"
        for row in _rows(info)
    )
    head = "".join(f"<div>{html.escape(line)}</div>" for line in _head(info))
    return (
        f'<div style="{_BOX}">{head}<div style="{SCROLLS}"><table style="border-collapse: '
        f'collapse">{body}</table></div><div>{html.escape(_HOW)}</div></div>'
    )


def cleared_text(cleared: CacheCleared) -> str:
    done = ", ".join(f"{n} {part}" for part, n in cleared.removed.items())
    lines = [f"cleared {done}: {byte_size(cleared.freed_bytes)} freed"]
    if "tune" in cleared.parts:
        lines.append(f"{cleared.records_removed} tuning records removed")
    lines += [f"kept {why}" for why in cleared.kept]
    return "\n".join(lines)


def cleared_html(cleared: CacheCleared) -> str:
    lines = "".join(f"<div>{html.escape(line)}</div>" for line in cleared_text(cleared).split("\n"))
    return f'<div style="{_BOX}">{lines}</div>'
