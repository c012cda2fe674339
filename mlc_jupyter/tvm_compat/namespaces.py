"""TVM itself and its namespaces under the course's names: ``tvm``, ``tir``, ``s_tir``, the
TVMScript names a cell sees, IR classes, structural equality and hashing, IR JSON, globals.

TVM is imported lazily: importing this module costs nothing. The other files of the boundary get
TVM from :func:`tvm` here.
"""

from __future__ import annotations

import functools
import importlib
import os
from collections.abc import Callable
from types import ModuleType
from typing import Any


@functools.cache
def use_all_cores() -> None:
    """Let TVM's CPU kernels use every core unless the user set ``TVM_NUM_THREADS``.

    TVM sizes each thread's pool when the thread first runs a kernel, from ``TVM_NUM_THREADS`` or
    else half the logical CPUs (it assumes hyper-threading), and reads the variable again when it
    launches parallel work. On a 2-core machine without it, every kernel runs on ONE thread while
    the host target says ``num-cores=2``: tuned kernels time at half speed. Called before TVM is
    imported and by ``%load_ext``; it must stay set.

    TVM also pins each worker of a pool to a core of its own unless ``TVM_BIND_THREADS`` is 0. A
    notebook's machine runs other work (a second notebook, a tune, a browser): a worker pinned to
    a core that another process keeps busy shares that core and every parallel kernel waits for
    it, while an unpinned one moves to the core that is free. So the workers float too (as
    PyTorch's and ONNX Runtime's do by default) unless the user set the variable.
    """
    os.environ.setdefault("TVM_NUM_THREADS", str(os.cpu_count() or 1))
    os.environ.setdefault("TVM_BIND_THREADS", "0")


def tvm() -> ModuleType:
    """Import and return the ``tvm`` package (about 3 s the first time)."""
    use_all_cores()
    import tvm as _tvm

    return _tvm


def tir() -> ModuleType:
    """The TIR namespace under the course's name (``tvm.tirx`` in 0.27): expressions,
    statements, ``PrimFunc``, ``IndexMap``."""
    return tvm().tirx


def s_tir() -> ModuleType:
    """The scheduled-TIR namespace (``Schedule``, ``SBlock`` ...)."""
    import tvm.s_tir as _s_tir

    return _s_tir


def version() -> str:
    return str(tvm().__version__)


def is_tvm_object(obj: Any) -> bool:
    """True for TVM objects, without importing TVM when it is not loaded yet."""
    module = type(obj).__module__ or ""
    return module.split(".")[0] in {"tvm", "tvm_ffi"}


def is_array(obj: Any) -> bool:
    """True for the FFI ``Array`` a Relax function returns for a tuple of outputs."""
    if not is_tvm_object(obj):
        return False
    import tvm_ffi

    return isinstance(obj, tvm_ffi.Array)


def ir_module_type() -> type:
    """The class of IR modules (``tvm.IRModule``), for ``isinstance``."""
    return tvm().IRModule


def prim_func_type() -> type:
    """The class of TensorIR functions (``tvm.tir.PrimFunc`` in the course), for ``isinstance``."""
    return tir().PrimFunc


def structural_equal(a: Any, b: Any, map_free_vars: bool = False) -> bool:
    import tvm_ffi

    return bool(tvm_ffi.structural_equal(a, b, map_free_vars))


def assert_structural_equal(a: Any, b: Any) -> None:
    tvm().ir.assert_structural_equal(a, b)


def structural_hash(obj: Any) -> int:
    import tvm_ffi

    return int(tvm_ffi.structural_hash(obj))


def structural_map(node: Any, node_type: type, replace: Callable[[Any], Any]) -> Any:
    """``node`` rebuilt bottom-up with every ``node_type`` inside it passed through ``replace``
    (which returns its argument unchanged or a new node); ``node`` itself when nothing changed."""
    import tvm_ffi

    return tvm_ffi.structural_map(node, (node_type, replace), order="post")


def save_json(obj: Any) -> str:
    """TVM's JSON of an IR object (what :func:`load_json` reads back)."""
    return str(tvm().ir.save_json(obj))


def load_json(text: str) -> Any:
    """The IR object of JSON that :func:`save_json` wrote with this TVM version (a disk cache
    entry's key names it), read without ``tvm.ir.load_json``'s upgrade of older JSON: the
    upgrade parses the whole text in Python and writes it out again, most of a model's cache
    hit."""
    from tvm_ffi.serialization import from_json_graph_str  # deferred: imports TVM

    return from_json_graph_str(text)


def register_global_func(name: str, func: Any = None, override: bool = False) -> Any:
    """Register a packed function (``tvm.register_func`` in the course); a decorator without f."""
    return tvm().register_global_func(name, func, override=override)


def support_module(name: str) -> ModuleType:
    """``tvm.support.<name>`` (``tvm.contrib.<name>`` in the course: ``utils``, ``clang``...)."""
    tvm()
    return importlib.import_module(f"tvm.support.{name}")


@functools.cache
def script_namespaces() -> dict[str, Any]:
    """The names a TVMScript cell sees without imports: ``T``, ``I``, ``R``, ``tvm``."""
    _tvm = tvm()
    from tvm.script import ir as I  # noqa: N812
    from tvm.script import relax as R  # noqa: N812
    from tvm.script import tirx as T  # noqa: N812

    return {"T": T, "I": I, "R": R, "tvm": _tvm, "relax": _tvm.relax}


def schedule_namespace() -> dict[str, Any]:
    """The names schedule code sees without imports: the script names and the schedule package."""
    return {**script_namespaces(), "s_tir": s_tir()}


#: The TVMScript namespace that ``T`` stands for (``tir`` in the course).
TIR_SCRIPT_NAMESPACE = "tirx"


#: The IR classes shown with highlighting, as ``(module, class name)`` (no TVM import needed).
IR_DISPLAY_TYPES = (
    ("tvm.ir.module", "IRModule"),
    ("tvm.tirx.function", "PrimFunc"),
    ("tvm.relax.expr", "Function"),
)


#: Course names of schedule classes that 0.27 renamed (blocks became sblocks).
_RENAMED_BLOCK_NAMES = {
    "Block": "SBlock",
    "BlockRV": "SBlockRV",
    "BlockRealize": "SBlockRealize",
    "BlockScope": "SBlockScope",
}


def course_tir_attr(name: str) -> Any:
    """What the course's ``tvm.tir.<name>`` is in 0.27: the IR name (``tvm.tirx``), else the
    schedule name (``tvm.s_tir``, with blocks renamed to sblocks). Raises ``AttributeError``."""
    for namespace in (tir(), s_tir()):
        for candidate in (name, _RENAMED_BLOCK_NAMES.get(name, name)):
            if hasattr(namespace, candidate):
                return getattr(namespace, candidate)
    raise AttributeError(f"TVM 0.27 has no tir.{name} (looked in tvm.tirx and tvm.s_tir)")
