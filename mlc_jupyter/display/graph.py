"""A Relax function's dataflow graph as rich output: SVG (Graphviz) with the text fallback."""

from __future__ import annotations

import html
from typing import Any

from ..graph import Graph, function_graph, graph_svg, graph_text
from .highlight import PLAIN_PRE

__all__ = ["GraphView", "graph_bundle", "graph_html"]

_CAPTION = "font-family: var(--jp-ui-font-family, sans-serif); font-size: 12px; opacity: 0.75;"


def graph_html(graph: Graph) -> str:
    """The graph as HTML: inline SVG, or the text listing in a ``<pre>`` without Graphviz."""
    svg = graph_svg(graph)
    if svg is None:
        note = "(install Graphviz's dot to draw the graph; text listing:)"
        body = (
            f'<pre style="{PLAIN_PRE}">{html.escape(note)}\n{html.escape(graph_text(graph))}</pre>'
        )
    else:  # drawn at its own size (readable) in a box that scrolls, never shrunk to the cell
        body = (
            '<div class="mlc-graph-drawing" style="overflow: auto; max-height: 640px">'
            + svg
            + "</div>"
        )
    ops = len(graph.operators)
    caption = f"{graph.name}: {ops} operator{'s' if ops != 1 else ''}"
    if graph.groups:
        caption += f", {len(graph.groups)} fused function{'s' if len(graph.groups) != 1 else ''}"
    return f'<div class="mlc-graph-view"><div style="{_CAPTION}">{html.escape(caption)}</div>{body}</div>'


def graph_bundle(graph: Graph) -> dict[str, str]:
    """``text/html`` (SVG or the listing) and ``text/plain`` (the listing)."""
    return {"text/html": graph_html(graph), "text/plain": graph_text(graph)}


class GraphView:
    """What ``%mlc_graph`` returns: the graph of one Relax function, shown as SVG + text."""

    def __init__(self, mod: Any, func: str | None = None, fused: str = "auto") -> None:
        self.graph = function_graph(mod, func, fused)

    def svg(self) -> str | None:
        """The SVG text (``None`` without Graphviz)."""
        return graph_svg(self.graph)

    def _repr_mimebundle_(self, **_kwargs: Any) -> dict[str, str]:
        return graph_bundle(self.graph)

    def __repr__(self) -> str:
        return graph_text(self.graph)
