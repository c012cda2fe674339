"""Accesses a condition keeps inside their buffer: a proof under the guards around each access.

TVM's static checker (:func:`~mlc_jupyter.tvm_compat.check_out_of_bounds`) bounds an index by its
loops and block iterators only, so it refuses accesses that a condition keeps inside: a block
predicate (``T.where``, from a split that does not divide or dlight's guards),
``T.if_then_else`` padding, an ``if`` (``likely`` or not). :mod:`.bounds` asks here before it
reports such a finding. The walk goes by reflection with the boundary's names, as
:mod:`.tir_walk` does, and keeps the conditions in scope while it reads each branch.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from ..tvm_compat import (
    IF_THEN_ELSE_OP,
    LIKELY_OP,
    analyzer,
    buffer_access,
    is_ir_node,
    node_fields,
    structural_map,
    symbolic_bound_strength,
    tir_nodes,
)
from .tir_walk import SKIPPED_FIELDS, is_sequence

#: Fields of IR nodes that hold no code to look into.
_NOT_CHILDREN = SKIPPED_FIELDS | {"annotations"}
#: Fields of a block that declare buffers rather than access them.
_DECLARATIONS = ("reads", "writes", "alloc_buffers")


def guarded_in_bounds(
    func: Any, buffers: set[str], extents: dict[str, tuple[Any, ...]] | None = None
) -> list[tuple[Any, Any, tuple[bool, ...]]]:
    """Every access of a PrimFunc to the buffers named in ``buffers``: ``(buffer, indices,
    inside)``, where ``inside[d]`` says the analyzer proves index ``d`` inside its dimension
    under the conditions that guard the access.

    Each condition is a constraint while its branch is read, in two spellings: as written (block
    iterators over their domains) and with the iterators replaced by their bindings (the loops
    that a predicate speaks of). Z3 backs the proof where this TVM build has it. ``extents``
    replaces a named buffer's shape (a view checked against the memory it views).
    """
    nodes = tir_nodes()
    guard = Guards()
    found: list[tuple[Any, Any, tuple[bool, ...]]] = []

    def record(buffer: Any, indices: Any) -> None:
        if buffer.name in buffers:
            shape = (extents or {}).get(buffer.name, buffer.shape)
            inside = tuple(
                guard.inside(i, extent) for i, extent in zip(indices, shape, strict=False)
            )
            found.append((buffer, indices, inside))

    def expr(node: Any) -> None:
        if is_sequence(node):
            for item in node:
                expr(item)
            return
        if not is_ir_node(node):
            return
        access = buffer_access(node)
        if access is not None and not access[2]:
            record(access[0], access[1])
        if _op_name(node) == IF_THEN_ELSE_OP:
            condition, then_value, else_value = node.args
            expr(condition)
            with guard.scope(condition):
                expr(then_value)
            with guard.scope(nodes.Not(condition)):
                expr(else_value)
            return
        for name, child in node_fields(node):
            if name not in _NOT_CHILDREN:
                expr(child)

    def stmt(node: Any) -> None:
        if isinstance(node, nodes.For):
            guard.bind(node.loop_var, nodes.Range.from_min_extent(node.min, node.extent))
            stmt(node.body)
        elif isinstance(node, nodes.BlockRealize):
            for iter_var, value in zip(node.block.iter_vars, node.iter_values, strict=False):
                guard.bind(iter_var.var, iter_var.dom, value)
            expr(node.iter_values)
            with guard.scope(node.predicate):
                stmt(node.block)
        elif isinstance(node, nodes.IfThenElse):
            expr(node.condition)
            with guard.scope(node.condition):
                stmt(node.then_case)
            if node.else_case is not None:
                with guard.scope(nodes.Not(node.condition)):
                    stmt(node.else_case)
        elif isinstance(node, nodes.LetStmt):
            expr(node.value)
            guard.bind(node.var, None, node.value)
            stmt(node.body)
        else:
            access = buffer_access(node)
            if access is not None:
                record(access[0], access[1])
            for name, child in node_fields(node):
                if name in _NOT_CHILDREN or name in _DECLARATIONS:
                    continue
                for item in child if is_sequence(child) else (child,):
                    if isinstance(item, nodes.Stmt | nodes.Block):
                        stmt(item)
                    elif item is not None:
                        expr(item)

    stmt(func.body)
    return found


def _op_name(node: Any) -> str:
    """The op a call applies (``IF_THEN_ELSE_OP`` for ``T.if_then_else(...)``), else ``""``."""
    return str(getattr(getattr(node, "op", None), "name", ""))


class Guards:
    """An analyzer that knows the loops, block iterators and conditions around an access."""

    def __init__(self) -> None:
        self.analyzer = analyzer()
        self.bindings: dict[Any, Any] = {}
        self.strength = symbolic_bound_strength()  # Z3 after TVM's own rules
        self._nodes = tir_nodes()

    def bind(self, var: Any, dom: Any, value: Any = None) -> None:
        """``var`` ranges over ``dom`` (None: unknown) and stands for ``value`` (None: itself)."""
        if dom is not None:
            self.analyzer.bind(var, dom, allow_override=True)
        if value is not None:
            self.bindings[var] = self.substituted(value)

    def substituted(self, expr: Any) -> Any:
        """``expr`` with block iterators (and let variables) replaced by what they are bound to."""
        if not self.bindings:
            return expr
        bindings = self.bindings
        return structural_map(expr, self._nodes.Var, lambda var: bindings.get(var, var))

    @contextlib.contextmanager
    def scope(self, condition: Any) -> Iterator[None]:
        """``condition`` holds inside the ``with``, as written and with the bindings substituted."""
        condition = structural_map(condition, self._nodes.Call, _without_likely)
        with contextlib.ExitStack() as scopes:
            scopes.enter_context(self.analyzer.constraint_scope(condition))
            bound = self.substituted(condition)
            if not bound.same_as(condition):
                scopes.enter_context(self.analyzer.constraint_scope(bound))
            yield

    def proves(self, condition: Any) -> bool:
        if self.analyzer.can_prove(condition, self.strength):
            return True
        # can_prove's canonical form can miss a constraint that the rewrite rules match
        simplified = self.analyzer.rewrite_simplify(condition)
        return isinstance(simplified, self._nodes.IntImm) and int(simplified) == 1

    def inside(self, index: Any, extent: Any) -> bool:
        """True when ``0 <= index < extent`` is proved under the conditions in scope."""
        try:
            for spelling in (index, self.substituted(index)):
                if self.proves(spelling >= 0) and self.proves(spelling < extent):
                    return True
        except Exception:  # noqa: BLE001 - an index the analyzer cannot compare (a vector ramp)
            return False  # is left to TVM's verdict
        return False


def _without_likely(call: Any) -> Any:
    """``T.likely(c)`` read as ``c`` (a hint to the compiler, same value); other calls as they are."""
    return call.args[0] if _op_name(call) == LIKELY_OP else call
