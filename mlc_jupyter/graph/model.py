"""A Relax function as a dataflow graph: operators are nodes, tensors are edges.

Weights (constants) are folded into the operator that reads them, tuple plumbing
(``TupleGetItem``, aliases) into the edges, so a ResNet reads as its layers. A call to a fused
Relax sub-function (``fused_matmul_add_relu`` after ``FuseOps``) is drawn either as a *group* (its
operators inside a box) or *collapsed* to one node; after ``FuseTIR`` it is one ``call_tir`` node,
so stepping through the passes shows the operators merging.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .. import tvm_compat

__all__ = ["FUSED_MODES", "Edge", "Graph", "Node", "function_graph", "module_op_counts"]

FUSED_MODES = ("auto", "group", "collapse")
#: ``auto`` groups fused functions while the drawing stays under this many nodes.
AUTO_GROUP_LIMIT = 60
_CALL_PACKED = {"relax.call_tir", "relax.call_dps_packed", "relax.call_tir_inplace",
                "relax.call_tir_with_grad"}  # fmt: skip


@dataclass(frozen=True)
class Node:
    """An operator (``op``), a TensorIR call (``tir``), a call of another function (``call``),
    a parameter (``input``), the result (``output``) or anything else (``other``).

    ``weights`` lists the constants it reads (folded into the node), ``group`` the fused
    function whose box it is drawn in ("" at top level)."""

    id: str
    label: str
    kind: str
    shape: str = ""
    weights: tuple[str, ...] = ()
    group: str = ""


@dataclass(frozen=True)
class Edge:
    """A tensor from ``src`` to ``dst``; ``label`` is its shape (``1×128``)."""

    src: str
    dst: str
    label: str = ""


@dataclass(frozen=True)
class Graph:
    """The dataflow graph of one Relax function; ``groups`` maps a box's id to its title."""

    name: str
    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]
    groups: dict[str, str] = field(default_factory=dict)

    @property
    def operators(self) -> list[Node]:
        return [n for n in self.nodes if n.kind in ("op", "tir", "call", "other")]


def _dims(expr: Any) -> str:
    shape, dtype = tvm_compat.tensor_shape_dtype(expr)
    if shape is None:
        return ""
    text = "×".join(shape) if shape else "scalar"
    return text if dtype in (None, "float32") else f"{text} {dtype}"


def _callee_name(expr: Any) -> str:
    kind = tvm_compat.relax_expr_kind(expr)
    if kind == "global":
        return str(expr.name_hint)
    if kind == "extern":
        return str(expr.global_symbol)
    return str(expr)


class _Builder:
    """Walks a function's bindings; ``env`` maps each variable to the nodes that produce it."""

    def __init__(self, mod: Any, expand: bool) -> None:
        self.mod, self.expand = mod, expand
        self.nodes: list[Node] = []
        self.edges: list[Edge] = []
        self.groups: dict[str, str] = {}
        self.folded: dict[Any, list[str]] = {}  # a fused function's parameter bound to weights
        self.tuples: dict[Any, Any] = {}  # a variable bound to a tuple expression: its fields
        self.ids = itertools.count()

    def node(self, label: str, kind: str, **kw: Any) -> str:
        node_id = f"n{next(self.ids)}"
        self.nodes.append(Node(node_id, label, kind, **kw))
        return node_id

    def sources(self, expr: Any, env: dict) -> tuple[list[tuple[str, str]], list[str]]:
        """(producer node, edge label) pairs and folded weights of an argument expression."""
        kind = tvm_compat.relax_expr_kind(expr)
        if kind == "var" and expr in self.folded:
            return [], self.folded[expr]
        if kind == "var":
            return [(src, label or _dims(expr)) for src, label in env.get(expr, [])], []
        if kind == "const":
            return [], [_dims(expr) or "const"]
        if kind == "tuple":
            pairs: list[tuple[str, str]] = []
            weights: list[str] = []
            for item in expr.fields:
                p, w = self.sources(item, env)
                pairs += p
                weights += w
            return pairs, weights
        if kind == "item":
            fields = self.tuples.get(expr.tuple_value)
            if fields is None and tvm_compat.relax_expr_kind(expr.tuple_value) == "tuple":
                fields = expr.tuple_value.fields
            if fields is not None:  # an element of a tuple built here: that element's producer
                return self.sources(fields[int(expr.index)], env)
            pairs, weights = self.sources(expr.tuple_value, env)
            return [(src, f"[{expr.index}]") for src, _ in pairs], weights
        return [], []

    def connect(self, dst: str, args: Any, env: dict) -> tuple[str, ...]:
        weights: list[str] = []
        for arg in args:
            pairs, w = self.sources(arg, env)
            weights += w
            self.edges.extend(Edge(src, dst, label) for src, label in pairs)
        return tuple(weights)

    def call(self, var: Any, value: Any, env: dict, group: str) -> list[tuple[str, str]]:
        op = value.op
        op_kind = tvm_compat.relax_expr_kind(op)
        if op_kind == "op" and str(op.name) in _CALL_PACKED:
            label, kind, args = _callee_name(value.args[0]), "tir", list(value.args[1:2])
        elif op_kind == "op":
            label, kind, args = str(op.name).removeprefix("relax."), "op", list(value.args)
        else:
            label, kind, args = _callee_name(op), "call", list(value.args)
            callee = self.mod[op] if op_kind == "global" else None
            if self.expand and isinstance(callee, tvm_compat.relax_function_type()):
                return self.inline(label, callee, args, env, group)
        node_id = self.node(label, kind, shape=_dims(var), group=group)
        weights = self.connect(node_id, args, env)
        if weights:
            self.nodes[-1] = Node(node_id, label, kind, _dims(var), weights, group)
        return [(node_id, "")]

    def inline(self, name: str, callee: Any, args: list, env: dict, group: str) -> list:
        """Draw a fused function's operators inside a box, wired to the caller's arguments."""
        box = f"cluster_{len(self.groups)}"
        self.groups[box] = name
        inner: dict = {}
        for param, arg in zip(callee.params, args, strict=False):
            inner[param], weights = self.sources(arg, env)
            if weights:  # a weight passed to the fused function: fold it into its readers
                self.folded[param] = weights
        return self.body(callee, inner, box)

    def body(self, func: Any, env: dict, group: str) -> list[tuple[str, str]]:
        for var, value in tvm_compat.relax_bindings(func):
            kind = tvm_compat.relax_expr_kind(value)
            if kind == "call":
                env[var] = self.call(var, value, env, group)
            elif kind in ("var", "tuple", "item"):
                if kind == "tuple":
                    self.tuples[var] = value.fields
                env[var] = self.sources(value, env)[0]
            elif kind == "const":
                env[var] = [(self.node("const", "other", shape=_dims(value), group=group), "")]
            else:
                env[var] = [(self.node(type(value).__name__, "other", group=group), "")]
        return self.sources(tvm_compat.relax_function_result(func), env)[0]


def _build(mod: Any, func: Any, name: str, expand: bool) -> Graph:
    builder = _Builder(mod, expand)
    env: dict = {}
    for param in func.params:
        env[param] = [(builder.node(tvm_compat.var_name(param), "input", shape=_dims(param)), "")]
    result = builder.body(func, env, "")
    out = builder.node("output", "output", shape=_dims(tvm_compat.relax_function_result(func)))
    builder.edges.extend(Edge(src, out, label) for src, label in result)
    return Graph(name, tuple(builder.nodes), tuple(builder.edges), builder.groups)


def function_graph(mod: Any, func_name: str | None = None, fused: str = "auto") -> Graph:
    """The dataflow graph of Relax function ``func_name`` of ``mod`` (default ``main``, else the
    first Relax function); ``fused`` is ``group``, ``collapse`` or ``auto`` (see the module doc).

    ``mod`` may also be a Relax function itself.
    """
    if fused not in FUSED_MODES:
        raise ValueError(f"fused must be one of {FUSED_MODES}, not {fused!r}")
    relax_function = tvm_compat.relax_function_type()
    if isinstance(mod, relax_function):
        name = str((mod.attrs or {}).get("global_symbol", func_name or "main"))
        mod, func_name = tvm_compat.ir_module_type()({name: mod}), name
    names = relax_function_names(mod)
    if not names:
        raise ValueError("the module has no Relax function to draw (only TensorIR)")
    name = func_name or ("main" if "main" in names else names[0])
    if name not in names:
        raise ValueError(f"no Relax function {name!r}; the module has: {', '.join(names)}")
    func = mod[name]
    if fused != "auto":
        return _build(mod, func, name, fused == "group")
    grouped = _build(mod, func, name, True)
    if grouped.groups and len(grouped.nodes) > AUTO_GROUP_LIMIT:
        return _build(mod, func, name, False)
    return grouped


def relax_function_names(mod: Any) -> list[str]:
    """Names of the module's Relax functions (not TensorIR), sorted."""
    relax_function = tvm_compat.relax_function_type()
    return sorted(str(gv.name_hint) for gv, f in mod.functions_items()
                  if isinstance(f, relax_function))  # fmt: skip


def module_op_counts(mod: Any) -> dict[str, int]:
    """Operator -> calls over every Relax function of ``mod``, plus the number of TensorIR
    functions (``TIR functions``): what a pass changed, at a glance."""
    counts: Counter[str] = Counter()
    relax_function = tvm_compat.relax_function_type()
    for _gv, func in mod.functions_items():
        if not isinstance(func, relax_function):
            counts["TIR functions"] += 1
            continue
        for _var, value in tvm_compat.relax_bindings(func):
            if tvm_compat.relax_expr_kind(value) != "call":
                continue
            op = value.op
            if tvm_compat.relax_expr_kind(op) == "op":
                counts[str(op.name).removeprefix("relax.")] += 1
            else:
                counts["call " + _callee_name(op)] += 1
    return dict(sorted(counts.items()))
