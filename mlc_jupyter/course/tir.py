"""``tvm.tir`` as the course used it: TVM 0.27's TIR names plus the schedule names that moved.

The course's ``tvm.tir`` held both the IR (``PrimFunc``, ``Var``, ``IntImm``...) and scheduling
(``Schedule``, ``BlockRV``, ``TensorIntrin``, ``analysis``...). TVM 0.27 split them; this module
looks a name up in the IR namespace first, then in the schedule namespace, so annotations such as
``def f(sch: tir.Schedule)`` work. ``TensorIntrin`` is the course shim (a re-run replaces it).
"""

from __future__ import annotations

from typing import Any

from .. import tvm_compat
from .registry import TensorIntrin


def __getattr__(name: str) -> Any:
    if name == "TensorIntrin":
        return TensorIntrin
    return tvm_compat.course_tir_attr(name)
