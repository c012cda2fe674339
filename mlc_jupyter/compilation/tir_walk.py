"""Walking a TensorIR body: every node in source order, its blocks, buffer accesses, extern calls,
block iterator bindings with the ranges around them.

TVM 0.27 has no Python visitor for TIR, so the walk goes by reflection; the names it needs (node
classes, fields, type keys) come from :mod:`mlc_jupyter.tvm_compat`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..tvm_compat import (
    CALL_EXTERN_OP,
    analyzer,
    buffer_access,
    buffer_declaration,
    is_ir_array,
    is_ir_node,
    node_fields,
    tir_nodes,
)

#: Fields that lead to no statement of the body (the walk would only revisit declarations).
SKIPPED_FIELDS = frozenset({"span", "ty", "buffer", "source", "dtype"})
#: The fields of a statement that hold statements.
_STMT_CHILDREN = ("body", "seq", "then_case", "else_case", "block", "init")


def is_sequence(node: Any) -> bool:
    """True for a Python list or tuple, or an FFI array of IR nodes (a ``SeqStmt``'s ``seq`` ...)."""
    return isinstance(node, list | tuple) or is_ir_array(node)


def ir_nodes(root: Any) -> Iterator[tuple[Any, Any]]:
    """Every node under ``root`` (a PrimFunc body or any TIR node) in source order, with its
    innermost enclosing statement, which carries the span."""
    stmt_type = tir_nodes().Stmt
    stack: list[tuple[Any, Any]] = [(root, root)]
    while stack:
        node, stmt = stack.pop()
        if is_sequence(node):
            stack.extend((item, stmt) for item in reversed(list(node)))
            continue
        if not is_ir_node(node):
            continue
        if isinstance(node, stmt_type):
            stmt = node
        yield node, stmt
        children = [child for name, child in node_fields(node) if name not in SKIPPED_FIELDS]
        stack.extend((child, stmt) for child in reversed(children))


def statements(root: Any) -> Iterator[Any]:
    """Every statement under ``root`` (a PrimFunc body or any TIR node) in source order, blocks
    included; expressions are not entered. Most of a kernel's nodes are expressions, so a walk
    for loops, blocks or buffer declarations stays a small part of a model's build."""
    stmt_type = tir_nodes().Stmt
    stack: list[Any] = [root]
    while stack:
        node = stack.pop()
        if is_sequence(node):
            stack.extend(reversed(list(node)))
            continue
        if not isinstance(node, stmt_type):
            continue
        yield node
        children = [child for name, child in node_fields(node) if name not in SKIPPED_FIELDS]
        stack.extend(reversed(children))


def buffer_accesses(root: Any) -> Iterator[tuple[Any, Any, bool, Any]]:
    """Every ``(buffer, indices, is_store, statement)`` under ``root`` (see :func:`ir_nodes`)."""
    for node, stmt in ir_nodes(root):
        access = buffer_access(node)
        if access is not None:
            yield (*access, stmt)


def buffer_views(root: Any) -> dict[Any, tuple[Any, Any]]:
    """Every buffer declared over another buffer's data under ``root`` (``V =
    T.decl_buffer(shape, dtype, data=B.data)``): ``{V: (B, statement)}``."""
    views = {}
    for stmt in statements(root):
        declared = buffer_declaration(stmt)
        if declared is not None and declared[1] is not None:
            views[declared[0]] = (declared[1], stmt)
    return views


def viewed_allocation(buffer: Any, views: dict[Any, tuple[Any, Any]]) -> Any:
    """The buffer that owns the memory ``buffer`` views (itself when it is no view), following
    views of views."""
    seen = 0
    while buffer in views and seen <= len(views):
        buffer, seen = views[buffer][0], seen + 1
    return buffer


def extern_calls(root: Any) -> Iterator[tuple[str, Any]]:
    """Every ``(symbol, statement)`` of a ``T.call_extern`` under ``root``."""
    for node, stmt in ir_nodes(root):
        op = getattr(node, "op", None)
        if getattr(op, "name", None) == CALL_EXTERN_OP and len(node.args):
            yield str(getattr(node.args[0], "value", node.args[0])), stmt


def blocks(root: Any) -> Iterator[Any]:
    """Every block under the statement ``root``, found along statements only (a kernel's
    expressions, most of its nodes, are not visited: a query by block name stays cheap)."""
    nodes = tir_nodes()
    stack = [root]
    while stack:
        stmt = stack.pop()
        if isinstance(stmt, nodes.Block):
            yield stmt
        for field in _STMT_CHILDREN:
            child = getattr(stmt, field, None)
            for item in child if field == "seq" and child is not None else (child,):
                if isinstance(item, nodes.Stmt | nodes.Block):
                    stack.append(item)


def block_bindings(func: Any) -> Iterator[tuple[Any, Any, Any, Any, bool]]:
    """Every block iterator binding of a PrimFunc: ``(block, iter_var, value, analyzer,
    predicated)``; ``analyzer`` knows the ranges of the loops and block iterators around the
    block; ``predicated`` says a ``T.where`` guards it.
    """
    nodes = tir_nodes()
    ranges = analyzer()
    stack = [func.body]
    while stack:
        stmt = stack.pop()
        if isinstance(stmt, nodes.For):
            extent = nodes.Range.from_min_extent(stmt.min, stmt.extent)
            ranges.bind(stmt.loop_var, extent, allow_override=True)
        elif isinstance(stmt, nodes.BlockRealize):
            predicate = stmt.predicate
            predicated = not (isinstance(predicate, nodes.IntImm) and int(predicate) == 1)
            for iter_var, value in zip(stmt.block.iter_vars, stmt.iter_values, strict=False):
                yield stmt.block, iter_var, value, ranges, predicated
            for iter_var in stmt.block.iter_vars:
                ranges.bind(iter_var.var, iter_var.dom, allow_override=True)
        for field in _STMT_CHILDREN:
            child = getattr(stmt, field, None)
            for item in child if field == "seq" and child is not None else (child,):
                if isinstance(item, nodes.Stmt | nodes.Block):
                    stack.append(item)
