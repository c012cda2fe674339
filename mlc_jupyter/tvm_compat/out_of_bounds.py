"""Out-of-bounds analysis of TensorIR: TVM's static checker (``OOBChecker``), and a proof that
guarded accesses stay inside their buffers (the analyzer's constraint scopes and proof strength,
Z3 where this TVM build has it), which the static check in :mod:`mlc_jupyter.compilation.bounds`
uses where TVM's own checker bounds an index by its loops only.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

from .namespaces import s_tir, tir, tvm
from .tensorir import buffer_access, node_fields


def check_out_of_bounds(mod: Any) -> str:
    """TVM's static out-of-bounds analysis of ``mod`` (``s_tir.analysis.OOBChecker``): ``""`` when
    it proves nothing, else its report, one ``Out of bounds memory access`` line per access.

    Rendering the report makes TVM's printer log C++ warnings on file descriptor 2, which a
    Jupyter kernel would show in the cell; they are dropped while the check runs.
    """
    checker = s_tir().analysis.OOBChecker()
    with _native_stderr_dropped():
        try:
            checker(mod)
        except Exception as err:  # noqa: BLE001 - the report is a ScheduleError's message
            return str(err) or type(err).__name__
    return ""


@contextlib.contextmanager
def _native_stderr_dropped() -> Iterator[None]:
    try:
        saved = os.dup(2)
    except OSError:  # no file descriptor 2 to borrow
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def guarded_in_bounds(func: Any, buffers: set[str]) -> list[tuple[Any, Any, tuple[bool, ...]]]:
    """Every access of a PrimFunc to the buffers named in ``buffers``: ``(buffer, indices,
    inside)``, where ``inside[d]`` says the analyzer proves index ``d`` inside its dimension
    under the conditions that guard the access.

    TVM's own checker bounds an index by its loops and block iterators only, so it refuses
    accesses that a condition keeps inside: a block predicate (``T.where``, from a split that does
    not divide or dlight's guards), ``T.if_then_else`` padding, an ``if`` (``likely`` or not).
    Here each condition is a constraint while its branch is read, in two spellings: as written
    (block iterators over their domains) and with the iterators replaced by their bindings (the
    loops that a predicate speaks of). Z3 backs the proof where this TVM build has it.
    """
    guard = _Guards(tvm().sym.Analyzer())
    found: list[tuple[Any, Any, tuple[bool, ...]]] = []

    def record(buffer: Any, indices: Any) -> None:
        if buffer.name in buffers:
            inside = tuple(
                guard.inside(i, extent) for i, extent in zip(indices, buffer.shape, strict=False)
            )
            found.append((buffer, indices, inside))

    def expr(node: Any) -> None:
        if _is_sequence(node):
            for item in node:
                expr(item)
            return
        if not hasattr(type(node), "__tvm_ffi_type_info__"):
            return
        access = buffer_access(node)
        if access is not None and not access[2]:
            record(access[0], access[1])
        if _op_name(node) == "if_then_else":
            condition, then_value, else_value = node.args
            expr(condition)
            with guard.scope(condition):
                expr(then_value)
            with guard.scope(tir().Not(condition)):
                expr(else_value)
            return
        for name, child in node_fields(node):
            if name not in _NOT_CHILDREN:
                expr(child)

    def stmt(node: Any) -> None:
        _tirx, _s_tir = tir(), s_tir()
        if isinstance(node, _tirx.For):
            guard.bind(node.loop_var, tvm().ir.Range.from_min_extent(node.min, node.extent))
            stmt(node.body)
        elif isinstance(node, _s_tir.SBlockRealize):
            for iter_var, value in zip(node.block.iter_vars, node.iter_values, strict=False):
                guard.bind(iter_var.var, iter_var.dom, value)
            expr(node.iter_values)
            with guard.scope(node.predicate):
                stmt(node.block)
        elif isinstance(node, _tirx.IfThenElse):
            expr(node.condition)
            with guard.scope(node.condition):
                stmt(node.then_case)
            if node.else_case is not None:
                with guard.scope(_tirx.Not(node.condition)):
                    stmt(node.else_case)
        elif isinstance(node, _tirx.LetStmt):
            expr(node.value)
            guard.bind(node.var, None, node.value)
            stmt(node.body)
        else:
            access = buffer_access(node)
            if access is not None:
                record(access[0], access[1])
            for name, child in node_fields(node):
                if name in _NOT_CHILDREN or name in ("reads", "writes", "alloc_buffers"):
                    continue
                for item in child if _is_sequence(child) else (child,):
                    if isinstance(item, _tirx.Stmt | _s_tir.SBlock):
                        stmt(item)
                    elif item is not None:
                        expr(item)

    stmt(func.body)
    return found


def _is_sequence(node: Any) -> bool:
    return isinstance(node, list | tuple) or type(node).__name__ in ("Array", "List")


#: Fields of IR nodes that hold no code to look into.
_NOT_CHILDREN = frozenset({"span", "ty", "dtype", "buffer", "source", "annotations"})


def _op_name(node: Any) -> str:
    """``if_then_else`` for ``T.if_then_else(...)`` (the op is ``prim.if_then_else`` in 0.27)."""
    name = str(getattr(getattr(node, "op", None), "name", ""))
    return name.rsplit(".", 1)[-1]


class _Guards:
    """An analyzer that knows the loops, block iterators and conditions around an access."""

    def __init__(self, analyzer: Any) -> None:
        self.analyzer = analyzer
        self.bindings: dict[Any, Any] = {}
        self.strength = tvm().sym.ProofStrength.SYMBOLIC_BOUND  # Z3 after TVM's own rules

    def bind(self, var: Any, dom: Any, value: Any = None) -> None:
        if dom is not None:
            self.analyzer.bind(var, dom, allow_override=True)
        if value is not None:
            self.bindings[var] = self.substituted(value)

    def substituted(self, expr: Any) -> Any:
        """``expr`` with block iterators (and let variables) replaced by what they are bound to."""
        if not self.bindings:
            return expr
        import tvm_ffi

        bindings = self.bindings
        return tvm_ffi.structural_map(
            expr, (tvm().ir.Var, lambda var: bindings.get(var, var)), order="post"
        )

    @contextlib.contextmanager
    def scope(self, condition: Any) -> Iterator[None]:
        condition = _without_likely(condition)
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
        return isinstance(simplified, tir().IntImm) and int(simplified) == 1

    def inside(self, index: Any, extent: Any) -> bool:
        try:
            for spelling in (index, self.substituted(index)):
                if self.proves(spelling >= 0) and self.proves(spelling < extent):
                    return True
        except Exception:  # noqa: BLE001 - an index the analyzer cannot compare (a vector ramp)
            return False  # is left to TVM's verdict
        return False


def _without_likely(condition: Any) -> Any:
    """``condition`` with ``T.likely(c)`` read as ``c`` (a hint to the compiler, same value)."""
    import tvm_ffi

    def unwrap(call: Any) -> Any:
        return call.args[0] if _op_name(call) == "likely" else call

    return tvm_ffi.structural_map(condition, (tvm().ir.Call, unwrap), order="post")
