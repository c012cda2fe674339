"""Register only the tensor intrinsics a target can use, once per process.

Creating a tuning task imports TVM's tensor-intrinsic package, which parses every intrinsic of
every backend (tens of seconds, most of it CUDA's). MetaSchedule's default CPU rules use none of
the GPU ones, so for an ``llvm`` target the package is set up without running its ``__init__``
and only the CPU modules are imported. GPU targets get the full import. A later explicit import
of the GPU submodules still works.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys

from ..tvm_compat import TENSOR_INTRIN_PACKAGE

#: The submodules a CPU target's schedule rules may use.
CPU_MODULES = ("dot_product_common", "x86", "arm_cpu", "riscv_cpu")
#: The submodules a GPU target adds.
GPU_MODULES = ("cuda", "rocm")


def load_tensor_intrinsics(target_kind: str) -> None:
    """Import the tensor intrinsics of ``target_kind`` (only the CPU ones for ``llvm``)."""
    name = TENSOR_INTRIN_PACKAGE
    if name in sys.modules:
        if target_kind != "llvm":
            for sub in GPU_MODULES:
                importlib.import_module(f"{name}.{sub}")
        return
    if target_kind != "llvm":
        importlib.import_module(name)
        return
    spec = importlib.util.find_spec(name)
    if spec is None:
        return
    package = importlib.util.module_from_spec(spec)
    sys.modules[name] = package
    for sub in CPU_MODULES:
        importlib.import_module(f"{name}.{sub}")
