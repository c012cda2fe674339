"""MetaSchedule (``tvm.meta_schedule`` in the course, under ``tvm.s_tir`` in 0.27): the package,
its logger and task loggers, seeds, Python subclasses of its objects, the tensor intrinsics it
schedules with, and keeping its notebook output out of the cell."""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import logging
import sys
import threading
from collections.abc import Iterator
from types import ModuleType
from typing import Any

from .namespaces import tvm


def metaschedule() -> ModuleType:
    """MetaSchedule (``tvm.meta_schedule`` in the course), TVM's tuning framework."""
    tvm()
    from tvm.s_tir import meta_schedule as ms

    return ms


#: The logger MetaSchedule writes its console and task logs under.
METASCHEDULE_LOGGER = "tvm.s_tir.meta_schedule"


#: TVM's package of TensorIR tensor intrinsics; its ``__init__`` imports every backend's.
TENSOR_INTRIN_PACKAGE = "tvm.s_tir.tensor_intrin"
_STUB_LOCK = threading.Lock()
_stub: dict[str, Any] = {"module": None, "users": 0}


@contextlib.contextmanager
def _intrinsic_package_without_init() -> Iterator[None]:
    """While inside, TVM's tensor-intrinsic package stands in ``sys.modules`` without running its
    ``__init__`` (seconds per backend), so importing one backend's module, or TVM's own
    ``import`` of the package (each ``TuneContext`` runs one), costs nothing more. After the last
    user, the package is TVM's again: its next import registers every backend's intrinsics, as
    raw MetaSchedule on a CUDA target expects (modules imported inside are not run twice)."""
    with _STUB_LOCK:
        if _stub["users"] == 0 and TENSOR_INTRIN_PACKAGE not in sys.modules:
            spec = importlib.util.find_spec(TENSOR_INTRIN_PACKAGE)
            if spec is not None:
                _stub["module"] = sys.modules[TENSOR_INTRIN_PACKAGE] = (
                    importlib.util.module_from_spec(spec)
                )
        _stub["users"] += 1
    try:
        yield
    finally:
        with _STUB_LOCK:
            _stub["users"] -= 1
            if _stub["users"] == 0 and _stub["module"] is not None:
                if sys.modules.get(TENSOR_INTRIN_PACKAGE) is _stub["module"]:
                    del sys.modules[TENSOR_INTRIN_PACKAGE]
                _stub["module"] = None


def import_tensor_intrinsics(submodules: tuple[str, ...], *, whole: bool = False) -> None:
    """Register TensorIR's tensor intrinsics of ``submodules`` (``"x86"``, ``"cuda"`` ...)
    without the other backends', or, ``whole``, every backend's (TVM's own import)."""
    tvm()
    if importlib.util.find_spec(TENSOR_INTRIN_PACKAGE) is None:
        return
    if whole:
        importlib.import_module(TENSOR_INTRIN_PACKAGE)
        return
    with _intrinsic_package_without_init():
        for sub in submodules:
            importlib.import_module(f"{TENSOR_INTRIN_PACKAGE}.{sub}")


def tune_context(**fields: Any) -> Any:
    """``ms.TuneContext(**fields)``, made without importing the tensor intrinsics of backends
    nobody asked for (its constructor imports TVM's whole package)."""
    with _intrinsic_package_without_init():
        return metaschedule().TuneContext(**fields)


def derived_object(cls: type) -> type:
    """TVM's decorator that makes a Python subclass of a TVM object class (``Py*`` classes)."""
    tvm()
    from tvm.ir.utils import derived_object as _derived

    return _derived(cls)


def metaschedule_task_loggers(work_dir: str, task_names: list[str]) -> list[Any]:
    """One logger per tuning task, writing to ``<work_dir>/logs`` as MetaSchedule's own do.

    MetaSchedule re-lists the handlers already on its logger by name in a ``dictConfig``, which
    fails on one without a name or one the config does not define; its config makes its own
    console and file handlers again, so the ones there are closed and dropped first.
    """
    from tvm.s_tir.meta_schedule.logging import get_loggers_from_work_dir

    global_logger = logging.getLogger(METASCHEDULE_LOGGER)
    for handler in list(global_logger.handlers):
        global_logger.removeHandler(handler)
        handler.close()
    return get_loggers_from_work_dir(work_dir, task_names)


def fork_seed(seed: int | None, n: int) -> list[int]:
    """``n`` random states for ``n`` tuning tasks derived from one ``seed``."""
    from tvm.s_tir.meta_schedule.utils import fork_seed as _fork

    return _fork(seed, n=n)


def remove_weight_layout_rewrite(mod: Any) -> Any:
    """Drop the layout-rewrite blocks a tuned candidate carries, so it builds on its own."""
    from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock

    return RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(mod)


@contextlib.contextmanager
def metaschedule_outside_notebook() -> Iterator[None]:
    """Keep MetaSchedule from drawing its pandas tables and clearing the cell.

    In a Jupyter kernel MetaSchedule's C++ side asks ``s_tir.meta_schedule.using_ipython`` and, if
    true, prints tables with pandas (not a dependency; ``No module named 'pandas'``) and calls
    ``clear_output``. While this context is active it sees a plain process and logs as text.
    """
    from tvm_ffi import get_global_func, register_global_func

    name = "s_tir.meta_schedule.using_ipython"
    metaschedule()  # registers the original
    original = get_global_func(name, allow_missing=True)
    register_global_func(name, lambda: False, override=True)
    try:
        yield
    finally:
        if original is not None:
            register_global_func(name, original, override=True)
