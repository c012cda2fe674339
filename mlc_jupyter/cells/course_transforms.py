"""The AST transforms course mode runs on each ordinary cell (IPython's ``ast_transformers``):
pure rewrites of the cell's syntax tree, no IPython.

After each top-level TVMScript definition, the ``%%tir`` magic's loop-extent check of what it
defined (:class:`CheckDefinitions`); after each ``i, j, k = sch.get_loops(b)``, a note of the
names the handles got (:class:`NameScheduleHandles`), so traces show them. Both call the course
shims under their cell name (``mlc_course``), which course mode puts in the namespace.
"""

from __future__ import annotations

import ast
import re

from ..dialect import COURSE_NAME
from ..tvm_compat import GET_BLOCK_METHOD

#: A decorator that makes TVMScript: a module (``@tvm.script.ir_module``, ``@I.ir_module``) or
#: a TIR function (``@T.prim_func``, with or without arguments).
_TVMSCRIPT_DECORATOR = re.compile(r"(^|\.)(ir_module|prim_func)$")


class CheckDefinitions(ast.NodeTransformer):
    """IPython AST transform: after each top-level TVMScript definition of a cell, the ``%%tir``
    magic's loop-extent check of what it defined (``mlc_course.check_definition``)."""

    def visit_Module(self, node: ast.Module) -> ast.Module:
        body: list[ast.stmt] = []
        for stmt in node.body:
            body.append(stmt)
            if isinstance(stmt, ast.ClassDef | ast.FunctionDef) and any(
                _TVMSCRIPT_DECORATOR.search(ast.unparse(_called(d))) for d in stmt.decorator_list
            ):
                check = ast.Expr(
                    ast.Call(
                        ast.Attribute(ast.Name(COURSE_NAME, ast.Load()), "check_definition",
                                      ast.Load()),
                        [ast.Name(stmt.name, ast.Load()), ast.Constant(stmt.name)],
                        [],
                    )
                )  # fmt: skip
                body.append(ast.fix_missing_locations(ast.copy_location(check, stmt)))
        node.body = body
        return node


#: Schedule methods that return block or loop handles (``i, j, k = sch.get_loops(b)``).
_HANDLE_METHODS = frozenset({
    GET_BLOCK_METHOD, "get_loops", "get_child_blocks", "get_producers", "get_consumers",
    "get_output_blocks", "split", "fuse", "merge", "cache_read", "cache_write", "cache_inplace",
    "reindex", "reindex_cache_read", "reindex_cache_write", "decompose_reduction", "rfactor",
    "blockize", "add_unit_loop", "loop_partition",
})  # fmt: skip


class NameScheduleHandles(ast.NodeTransformer):
    """IPython AST transform: after each ``names = x.<schedule method>(...)`` of a cell, in its
    functions too (the book's ``stochastic_schedule_mm``), ``mlc_course.name_handles`` notes the
    names the handles got, so ``%mlc_trace`` shows ``j_0, k, j_1`` instead of ``l4, l3, l5``."""

    def visit_Module(self, node: ast.Module) -> ast.Module:
        for owner in list(ast.walk(node)):
            for field in ("body", "orelse", "finalbody"):
                stmts = getattr(owner, field, None)
                if isinstance(stmts, list) and any(_names_handles(s) for s in stmts):
                    setattr(owner, field, [x for s in stmts for x in _with_naming(s)])
        return node


def _assigned_names(stmt: ast.stmt) -> list[str]:
    """``["i", "j", "k"]`` for ``i, j, k = sch.get_loops(b)``; ``[]`` for other statements."""
    if not isinstance(stmt, ast.Assign) or not isinstance(stmt.value, ast.Call):
        return []
    func = stmt.value.func
    if not isinstance(func, ast.Attribute) or func.attr not in _HANDLE_METHODS:
        return []
    names: list[str] = []
    for target in stmt.targets:
        elts = target.elts if isinstance(target, ast.Tuple | ast.List) else [target]
        if not all(isinstance(e, ast.Name) for e in elts):
            return []
        names += [e.id for e in elts]  # type: ignore[attr-defined]
    return names


def _names_handles(stmt: ast.stmt) -> bool:
    return bool(_assigned_names(stmt))


def _with_naming(stmt: ast.stmt) -> list[ast.stmt]:
    names = _assigned_names(stmt)
    if not names:
        return [stmt]
    values = ast.Dict([ast.Constant(n) for n in names], [ast.Name(n, ast.Load()) for n in names])
    call = ast.Expr(
        ast.Call(ast.Attribute(ast.Name(COURSE_NAME, ast.Load()), "name_handles", ast.Load()),
                 [values], [])
    )  # fmt: skip
    return [stmt, ast.fix_missing_locations(ast.copy_location(call, stmt))]


def _called(decorator: ast.expr) -> ast.expr:
    """``T.prim_func`` for ``@T.prim_func(private=True)``."""
    return decorator.func if isinstance(decorator, ast.Call) else decorator
