"""The course shims: the MLC book's old TVM *behaviour* on TVM 0.27, in one place.

Nothing here patches TVM. In course mode (``%mlc_course on``, the default after ``%load_ext``)
the dialect rules (:mod:`mlc_jupyter.dialect`) rewrite the few course spellings whose behaviour
is gone to names of this package, which ordinary cells reach as ``mlc_course``:

========================================  =========================================================
course spelling                           shim
========================================  =========================================================
``tvm.build(mod, target)``                :func:`build`: builds through the project (cache,
                                          checks) and returns a :class:`CourseModule`: the stock
                                          module's API plus ``rt_lib["f"]``, the book's
                                          ``time_evaluator`` (TVM's, on the caller's arrays,
                                          :mod:`.timer`) and ``imported_modules[0].get_source()``
``relax.build(mod, target)``              :func:`relax_build`: the same build (cache, checks);
                                          TVM's own Executable, so relax.VirtualMachine is stock
``tvm.nd.array`` / ``tvm.nd.empty``       :mod:`.nd`: runtime tensors; a GPU device without a GPU
                                          raises the project's "no GPU" error
``tvm.tir.X`` / ``from tvm import tir``   :mod:`.tir`: the TIR names plus the schedule names that
                                          moved (``tir.Schedule``, ``tir.BlockRV``)
``tvm.tir.TensorIntrin``                  :class:`TensorIntrin`: a re-run replaces the intrinsic
``tvm.register_func``                     :func:`register_func`: a re-run replaces the function
``ms`` (the book's MetaSchedule import)  :mod:`.tuning`: ``ms.tune_tir`` runs the project's
                                          tuner; ``compile_tir`` takes the book's IRModule
``te.create_schedule`` / ``tvm.lower``     :mod:`.te_schedule`: legacy TE schedules on a TensorIR
                                          schedule of ``te.create_prim_func``'s function;
                                          ``tvm.build(s, args)`` builds them
``relax.const(v, TensorStructInfo)``      :func:`relax_const`
(each TVMScript definition)                :func:`check_definition`: the ``%%tir`` loop-extent check
(each ``names = sch.get_loops(...)``...)  :func:`name_handles`: the names a cell gave schedule
                                          handles, which ``%mlc_trace`` shows
``tvm.contrib.clang / utils``             :mod:`.contrib`: ``clang.create_llvm`` compiles the C
                                          code with the C compiler present (gcc) and loads it
========================================  =========================================================

With course mode off no cell is rewritten and TVM behaves as stock 0.27.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "build": "modules",
    "CourseModule": "modules",
    "relax_build": "relax_executable",
    "check_definition": "checks",
    "name_handles": "handles",
    "register_func": "registry",
    "TensorIntrin": "registry",
    "relax_const": "values",
    "structural_equal": "values",
    "structural_hash": "values",
    "create_schedule": "te_schedule",
    "TESchedule": "te_schedule",
    "lower": "te_schedule",
}
_SUBMODULES = ("nd", "tir", "tuning", "contrib")

__all__ = [*_LAZY, *_SUBMODULES]


def __getattr__(name: str) -> Any:
    """Load a shim on first use (importing this package does not import TVM)."""
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
