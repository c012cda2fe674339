"""Register only the tensor intrinsics a target can use, once per process.

Creating a tuning task imports TVM's tensor-intrinsic package, which parses every intrinsic of
every backend (tens of seconds, most of it CUDA's). MetaSchedule's default CPU rules use none of
the GPU ones, so for an ``llvm`` target the package is set up without running its ``__init__``
and only the CPU modules are imported; a ``cuda`` target gets the CUDA module alone (its tensor
core rules, sm_75 and newer, need it), other GPU targets the full import. A later explicit
import of the other submodules still works.
"""

from __future__ import annotations

from typing import Any

from ..tvm_compat import import_tensor_intrinsics
from .targets import is_cuda, target_kind

#: The submodules a CPU target's schedule rules may use.
CPU_MODULES = ("dot_product_common", "x86", "arm_cpu", "riscv_cpu")
#: The submodules a GPU target adds.
GPU_MODULES = ("cuda", "rocm")
#: The submodules of the targets that need only some of the package.
MODULES_OF_KIND = {"llvm": CPU_MODULES, "cuda": ("cuda",)}


def load_tensor_intrinsics(target: Any, tensor_cores: bool = True) -> None:
    """Import the tensor intrinsics of ``target`` (any spelling: ``"cuda"`` will do; only its own
    for ``llvm`` and ``cuda``).

    ``tensor_cores=False`` for a ``cuda`` target whose spaces use no tensor-core rules: the
    package is set up empty (importing the CUDA module costs seconds before the first candidate).
    """
    own = MODULES_OF_KIND.get(target_kind(target))
    if is_cuda(target) and not tensor_cores:
        own = ()
    import_tensor_intrinsics(own if own is not None else GPU_MODULES, whole=own is None)
