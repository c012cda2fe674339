"""Draw a :class:`~mlc_jupyter.graph.model.Graph`: SVG through Graphviz ``dot``, or plain text.

Graphviz's ``dot`` (Debian's ``graphviz`` package) lays out layered dataflow graphs, draws fused
functions as boxes (clusters) and writes SVG, which a saved notebook shows as it is. Without it
(``dot`` not on ``PATH``) every view falls back to :func:`graph_text`.

Why dot: it is made for layered dataflow graphs and draws clusters natively (the fused-function
boxes); a pure-Python Sugiyama layout (grandalf) has no clusters and is slow on ResNet-sized
graphs, and a JavaScript layout in the widget (elkjs, dagre) would leave the saved notebook's
static view without a graph.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess

from .model import Graph, Node

__all__ = ["dot_available", "graph_svg", "graph_text", "to_dot"]

#: Seconds ``dot`` may take; a ResNet-sized graph takes a fraction of one.
DOT_TIMEOUT_S = 30
#: Above this many nodes edges lose their shape labels (kept in tooltips) to keep ranks short.
COMPACT_NODES = 40
_STYLE = {
    "input": 'shape=ellipse, style=filled, fillcolor="#d6e9f8"',
    "output": 'shape=ellipse, style=filled, fillcolor="#d6e9f8"',
    "op": 'shape=box, style="rounded,filled", fillcolor="#ffffff"',
    "tir": 'shape=box, style="filled", fillcolor="#fde7c8"',
    "call": 'shape=box3d, style="filled", fillcolor="#e4dcf5"',
    "other": 'shape=box, style="dashed,filled", fillcolor="#f2f2f2"',
}
_SVG_HEAD = re.compile(r"^.*?(?=<svg)", re.S)
_SVG_SIZE = re.compile(r'<svg width="([\d.]+)pt" height="([\d.]+)pt"')


@functools.cache
def dot_available() -> bool:
    """True when Graphviz's ``dot`` is on ``PATH`` (checked once per process)."""
    return shutil.which("dot") is not None


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _weights(weights: tuple[str, ...]) -> list[str]:
    """``("64", "64", "64")`` -> ``["3× w 64"]``: one line per distinct weight shape."""
    counts: dict[str, int] = {}
    for w in weights:
        counts[w] = counts.get(w, 0) + 1
    return [f"{n}× w {w}" if n > 1 else f"w {w}" for w, n in counts.items()]


def _label(node: Node) -> str:
    lines = [node.label]
    if node.kind in ("input", "output") and node.shape:
        lines.append(node.shape)
    lines.extend(_weights(node.weights)[:3])
    return "\n".join(lines)


def to_dot(graph: Graph) -> str:
    """The graph in Graphviz's DOT language (top to bottom, fused functions as clusters)."""
    compact = len(graph.nodes) > COMPACT_NODES
    out = [
        f"digraph {_quote(graph.name)} {{",
        f"  graph [rankdir=TB, nodesep=0.25, ranksep={0.15 if compact else 0.3}, "
        'bgcolor="transparent", fontname="Helvetica", fontsize=11];',
        '  node [fontname="Helvetica", fontsize=11, color="#555555", height=0.3, margin="0.1,0.04"];',
        '  edge [fontname="Helvetica", fontsize=9, color="#888888", fontcolor="#666666", '
        "arrowsize=0.6];",
    ]
    by_group: dict[str, list[Node]] = {}
    for node in graph.nodes:
        by_group.setdefault(node.group, []).append(node)

    def emit(node: Node, indent: str) -> None:
        attrs = f"label={_quote(_label(node))}, id={_quote('node-' + node.id)}, {_STYLE[node.kind]}"
        tip = f"{node.label} -> {node.shape}" if node.shape else node.label
        out.append(f"{indent}{node.id} [{attrs}, tooltip={_quote(tip)}];")

    for node in by_group.get("", []):
        emit(node, "  ")
    for box, title in graph.groups.items():
        out.append(f"  subgraph {box} {{")
        out.append(f'    label={_quote(title)}; style="rounded,filled"; fillcolor="#eef3ea"; '
                   'color="#7a9a62"; fontcolor="#3b5a26";')  # fmt: skip
        for node in by_group.get(box, []):
            emit(node, "    ")
        out.append("  }")
    for edge in graph.edges:
        label = ""
        if edge.label:
            label = f" [{'tooltip' if compact else 'label'}={_quote(edge.label)}]"
        out.append(f"  {edge.src} -> {edge.dst}{label};")
    out.append("}")
    return "\n".join(out)


def graph_svg(graph: Graph) -> str | None:
    """The graph as inline SVG at its own size (its text readable; the page around it scrolls,
    pans or zooms it), or ``None`` without ``dot``.

    Raises ``RuntimeError`` with dot's message if dot fails on the graph.
    """
    if not dot_available():
        return None
    done = subprocess.run(
        ["dot", "-Tsvg"], input=to_dot(graph).encode(), capture_output=True,
        timeout=DOT_TIMEOUT_S, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"dot failed: {done.stderr.decode(errors='replace').strip()[:300]}")
    svg = _SVG_HEAD.sub("", done.stdout.decode(), count=1)
    return _SVG_SIZE.sub(
        lambda m: (
            f'<svg width="{m[1]}pt" height="{m[2]}pt" style="max-width: none; height: auto" '
            f'class="mlc-graph" data-function={_quote(graph.name)}'
        ),
        svg,
        count=1,
    )


def graph_text(graph: Graph) -> str:
    """The graph as text, one operator a line in dataflow order (the fallback without SVG)."""
    names = {n.id: n for n in graph.nodes}
    inputs: dict[str, list[str]] = {}
    for edge in graph.edges:
        source = names[edge.src]
        suffix = edge.label if edge.label.startswith("[") else ""
        inputs.setdefault(edge.dst, []).append(f"{source.label}{suffix}")
    ops = len(graph.operators)
    head = f"{graph.name}: {ops} operator{'s' if ops != 1 else ''}"
    if graph.groups:
        head += (
            f" ({len(graph.groups)} fused function{'s' if len(graph.groups) != 1 else ''} boxed)"
        )
    lines = [head]
    for node in graph.nodes:
        args = ", ".join(inputs.get(node.id, []) + [f"w {w}" for w in node.weights])
        box = f"[{graph.groups[node.group]}] " if node.group else ""
        shape = f" -> {node.shape}" if node.shape else ""
        if node.kind == "input":
            lines.append(f"  input {node.label}{shape.replace(' -> ', ': ')}")
        elif node.kind == "output":
            lines.append(f"  output({args}){shape}")
        else:
            lines.append(f"  {box}{node.label}({args}){shape}")
    return "\n".join(lines)
