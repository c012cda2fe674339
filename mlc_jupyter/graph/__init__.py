"""Relax functions as dataflow graphs (operators as nodes, tensors as edges), drawn as SVG.

Plain Python + TVM: ``function_graph(mod)`` builds the graph, ``graph_svg`` draws it with
Graphviz's ``dot`` (``None`` when it is not installed), ``graph_text`` is the text fallback.
"""

from __future__ import annotations

from .draw import dot_available, graph_svg, graph_text, to_dot
from .model import (
    FUSED_MODES,
    Edge,
    Graph,
    Node,
    function_graph,
    module_op_counts,
    relax_function_names,
)

__all__ = [
    "FUSED_MODES",
    "Edge",
    "Graph",
    "Node",
    "dot_available",
    "function_graph",
    "graph_svg",
    "graph_text",
    "module_op_counts",
    "relax_function_names",
    "to_dot",
]
