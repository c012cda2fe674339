"""The code a build generated: TensorIR, LLVM IR, assembly, GPU kernel source (CUDA, Metal,
OpenCL) or PTX."""

from __future__ import annotations

from typing import Any

from ..errors import BuildError
from .targets import is_cpu

SOURCE_KINDS = ("tir", "llvm", "asm", "cuda", "ptx", "metal", "opencl")
#: The kinds whose code is the source of a GPU module of that kind.
GPU_SOURCE_KINDS = ("cuda", "metal", "opencl")


def generated_source(built: Any, kind: str = "tir") -> str:
    """The ``kind`` source of ``built`` (one of :data:`SOURCE_KINDS`)."""
    if kind == "tir":
        return str(built.mod.script())
    if kind not in SOURCE_KINDS:
        raise BuildError(f"unknown source kind {kind!r}", hint="use " + ", ".join(SOURCE_KINDS))
    if kind == "ptx":
        return _ptx(built)
    if kind in GPU_SOURCE_KINDS:
        return _gpu_source(built, kind)
    built = in_memory(built)
    runtime = built.executable.mod
    modules = [runtime, *_imports(runtime)]
    fmt = "ll" if kind == "llvm" else "asm"
    for module in modules:
        if module.kind == "llvm":
            return str(module.inspect_source(fmt))
    raise BuildError(f"no {kind} code in this build (modules: {[m.kind for m in modules]})")


def in_memory(built: Any) -> Any:
    """``built`` when its code is in memory (its LLVM IR and assembly can be read, it can be
    exported), else the same build compiled again in this kernel: a CPU build runs from a shared
    library when it was loaded from disk or linked as it was written there."""
    library = getattr(built, "from_disk", False) or (
        is_cpu(built.target) and not _llvm_modules(built.executable)
    )
    return built.runtime.fresh_build(built) if library else built


def _llvm_modules(executable: Any) -> list[Any]:
    """The LLVM modules (which keep their IR and assembly) of a build's runtime module tree; a
    build that runs from a shared library has none."""
    runtime = executable.mod
    return [m for m in [runtime, *_imports(runtime)] if m.kind == "llvm"]


def _imports(module: Any) -> list[Any]:
    found = []
    for child in getattr(module, "imports", []):
        found.append(child)
        found.extend(_imports(child))
    return found


def cuda_module(executable: Any) -> Any:
    """The CUDA module of a build's runtime module tree, or ``None``."""
    return gpu_module(executable, "cuda")


def gpu_module(executable: Any, kind: str) -> Any:
    """The ``kind`` (``cuda``, ``metal``...) module of a build's runtime module tree, or ``None``."""
    runtime = executable.mod
    return next((m for m in [runtime, *_imports(runtime)] if m.kind == kind), None)


def _gpu_source(built: Any, kind: str) -> str:
    module = gpu_module(built.executable, kind)
    if module is None:
        raise BuildError(
            f"no {kind.upper() if kind == 'cuda' else kind.capitalize()} code: the module was"
            f" built for {built.target.kind.name}",
            hint=f"build with --target {kind}",
        )
    return str(module.inspect_source())


def _ptx(built: Any) -> str:
    _gpu_source(built, "cuda")  # no CUDA module: say how to get one
    code = built.device_code
    if code is None or not code.ptx:
        raise BuildError(
            f"no PTX: {code.note if code else 'the kernels were not compiled'}",
            hint="PTX comes from nvcc (the CUDA toolkit) at build time",
        )
    return code.ptx
