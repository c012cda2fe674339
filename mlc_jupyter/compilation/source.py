"""The code a build generated: TensorIR, LLVM IR, assembly, CUDA or PTX."""

from __future__ import annotations

from typing import Any

from ..errors import BuildError

SOURCE_KINDS = ("tir", "llvm", "asm", "cuda", "ptx")


def generated_source(built: Any, kind: str = "tir") -> str:
    """The ``kind`` source of ``built`` (``tir``, ``llvm``, ``asm``, ``cuda`` or ``ptx``)."""
    if kind == "tir":
        return str(built.mod.script())
    if kind not in SOURCE_KINDS:
        raise BuildError(f"unknown source kind {kind!r}", hint="use " + ", ".join(SOURCE_KINDS))
    if kind in ("cuda", "ptx"):
        return _cuda_source(built, kind)
    if getattr(built, "from_disk", False):
        built = built.runtime.fresh_build(built)  # a loaded library keeps no LLVM module
    runtime = built.executable.mod
    modules = [runtime, *_imports(runtime)]
    fmt = "ll" if kind == "llvm" else "asm"
    for module in modules:
        if module.kind == "llvm":
            return str(module.inspect_source(fmt))
    raise BuildError(f"no {kind} code in this build (modules: {[m.kind for m in modules]})")


def _imports(module: Any) -> list[Any]:
    found = []
    for child in getattr(module, "imports", []):
        found.append(child)
        found.extend(_imports(child))
    return found


def cuda_module(executable: Any) -> Any:
    """The CUDA module of a build's runtime module tree, or ``None``."""
    runtime = executable.mod
    return next((m for m in [runtime, *_imports(runtime)] if m.kind == "cuda"), None)


def _cuda_source(built: Any, kind: str) -> str:
    module = cuda_module(built.executable)
    if module is None:
        raise BuildError(
            f"no CUDA code: the module was built for {built.target.kind.name}",
            hint="build with --target cuda",
        )
    if kind == "cuda":
        return str(module.inspect_source())
    code = built.device_code
    if code is None or not code.ptx:
        raise BuildError(
            f"no PTX: {code.note if code else 'the kernels were not compiled'}",
            hint="PTX comes from nvcc (the CUDA toolkit) at build time",
        )
    return code.ptx
