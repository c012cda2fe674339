"""Checks the MLC book promises and TVM 0.27 dropped.

The book (section 2.4.3) says a loop whose extent differs from the domain of the block iterator
bound to it is an error; TVM 0.27 parses, schedules and builds such a function, and simply never
writes the missing elements. :func:`check_loop_extents` reports it at the cell line of the
iterator's binding.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, Protocol

from .. import tvm_compat
from ..errors import CellError, LoopExtentError

_CHILD_FIELDS = ("body", "seq", "then_case", "else_case", "block", "init")


class _Locates(Protocol):
    translation: Any

    def error(self, message: str, line: int, column: int, **kwargs: Any) -> CellError: ...


def prim_funcs(obj: Any) -> Iterator[tuple[str, Any]]:
    """Every ``(name, PrimFunc)`` in ``obj`` (a PrimFunc or an IRModule)."""
    prim_func = tvm_compat.prim_func_type()
    if isinstance(obj, prim_func):
        yield "", obj
    elif isinstance(obj, tvm_compat.ir_module_type()):
        for gvar, func in obj.functions_items():
            if isinstance(func, prim_func):
                yield gvar.name_hint, func


def loop_extent_mismatches(func: Any) -> list[tuple[str, str, int, int]]:
    """``(block, iterator, loop extent, iterator extent)`` for every mismatch in ``func``."""
    nodes = tvm_compat.tir_nodes()
    found: list[tuple[str, str, int, int]] = []

    def visit(stmt: Any, loops: dict[Any, Any]) -> None:
        if isinstance(stmt, nodes.For):
            loops = {**loops, stmt.loop_var: stmt.extent}
        if isinstance(stmt, nodes.BlockRealize):
            block = stmt.block
            for iter_var, value in zip(block.iter_vars, stmt.iter_values, strict=False):
                loop_extent = loops.get(value) if isinstance(value, nodes.Var) else None
                dom = iter_var.dom.extent
                both_known = isinstance(loop_extent, nodes.IntImm) and isinstance(dom, nodes.IntImm)
                if both_known and int(loop_extent) != int(dom):
                    found.append((block.name_hint, iter_var.var.name, int(loop_extent), int(dom)))
        for field in _CHILD_FIELDS:
            child = getattr(stmt, field, None)
            if child is None:
                continue
            for item in child if field == "seq" else (child,):
                if isinstance(item, nodes.Stmt):
                    visit(item, loops)

    visit(func.body, {})
    return found


def check_loop_extents(obj: Any, name: str, locator: _Locates) -> None:
    """Raise :class:`LoopExtentError` at the binding's cell line for the first mismatch."""
    for func_name, func in prim_funcs(obj):
        for block, iterator, loop_extent, dom_extent in loop_extent_mismatches(func):
            line, column = _find_binding(locator.translation.source, block, iterator)
            where = f"{name}.{func_name}" if func_name and func_name != name else name
            raise locator.error(
                f'block "{block}" in {where}: iterator {iterator} has domain {dom_extent} but its '
                f"loop runs {loop_extent} times",
                line,
                column,
                hint=f"make the loop extent and the T.axis domain agree ({dom_extent}); otherwise "
                "some elements are never computed",
                cls=LoopExtentError,
            )


def _find_binding(source: str, block: str, iterator: str) -> tuple[int, int]:
    """The 1-based line and column of ``iterator = T.axis...`` inside block ``block``."""
    lines = source.splitlines()
    start = 0
    block_re = re.compile(r"T\.s?block\(\s*[\"']" + re.escape(block) + r"[\"']")
    for index, text in enumerate(lines):
        if block_re.search(text):
            start = index
            break
    binding = re.compile(r"\b" + re.escape(iterator) + r"\b[^=]*=\s*T\.axis")
    for index in range(start, len(lines)):
        found = binding.search(lines[index])
        if found:
            return index + 1, found.start() + 1
    return start + 1, 1
