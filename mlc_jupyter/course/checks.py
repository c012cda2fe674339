"""The ``%%tir`` magic's loop-extent check, for a module or function an ordinary cell defines.

In course mode each top-level ``@tvm.script.ir_module`` class and ``@T.prim_func`` function of a
cell is followed by a call of :func:`check_definition` (the course mode's AST transform adds it),
so a loop whose extent differs from its block iterator's domain (book section 2.4.3) is reported
as the magic reports it: a :class:`~mlc_jupyter.errors.LoopExtentError` at the iterator's line.
"""

from __future__ import annotations

import linecache
import sys
from typing import Any

from .. import origins
from ..cells.checks import check_loop_extents, prim_funcs
from ..cells.parse import Locator
from ..dialect import Translation


def check_definition(obj: Any, name: str) -> None:
    """Raise ``LoopExtentError`` at the cell line of the first mismatch in ``obj`` (an IRModule
    or a PrimFunc defined by the calling cell); anything else passes."""
    if next(prim_funcs(obj), None) is None:
        return
    file_name = sys._getframe(1).f_code.co_filename
    found = origins.python_cell(file_name)
    if found is None:
        text = "".join(linecache.getlines(file_name))
        found = (Translation(text, text), 1, "cell")
    translation, first_line, cell_name = found
    check_loop_extents(obj, name, Locator(translation, file_name, first_line, cell_name))
