"""Out-of-bounds analysis of TensorIR: TVM's static checker (``OOBChecker``), and what
:mod:`mlc_jupyter.compilation.guards` needs to prove a guarded access inside its buffer where
that checker ranges an index over its loops only: the ops of ``T.if_then_else`` and ``T.likely``
and the analyzer's strongest proof (constraint scopes are a method of :func:`.tensorir.analyzer`'s
analyzer).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

from .namespaces import s_tir, tvm

#: The op of ``T.if_then_else(c, a, b)`` (``tir.if_then_else`` before 0.27).
IF_THEN_ELSE_OP = "prim.if_then_else"
#: The op of ``T.likely(c)``, a branch hint with the value of ``c`` (``tir.likely`` before 0.27).
LIKELY_OP = "prim.likely"


def symbolic_bound_strength() -> Any:
    """The analyzer's strongest proof (``ProofStrength.SYMBOLIC_BOUND``: symbolic bounds after its
    own rules, Z3 where this TVM build has it) for ``analyzer.can_prove(cond, strength)``."""
    return tvm().sym.ProofStrength.SYMBOLIC_BOUND


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
