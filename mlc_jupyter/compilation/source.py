"""The code a build generated: TensorIR, LLVM IR, assembly or CUDA."""

from __future__ import annotations

from typing import Any

from ..errors import BuildError

SOURCE_KINDS = ("tir", "llvm", "asm", "cuda")


def generated_source(built: Any, kind: str = "tir") -> str:
    """The ``kind`` source of ``built`` (``tir``, ``llvm``, ``asm`` or ``cuda``)."""
    if kind == "tir":
        return str(built.mod.script())
    if kind not in SOURCE_KINDS:
        raise BuildError(f"unknown source kind {kind!r}", hint="use tir, llvm, asm or cuda")
    runtime = built.executable.mod
    modules = [runtime, *_imports(runtime)]
    if kind == "cuda":
        for module in modules:
            if module.kind == "cuda":
                return str(module.inspect_source())
        raise BuildError(
            f"no CUDA code: the module was built for {built.target.kind.name}",
            hint="build with --target cuda",
        )
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
