"""Build a PrimFunc / TIR module / Relax module for a target, with an in-memory cache.

The cache key is the module's structural hash, the resolved target, the TVM version and whether
the build is checked; a hit is checked with structural equality and comes back at once with
``cached=True``. Before anything is built, TVM's static bounds analysis refuses a kernel that
provably indexes outside a buffer (:mod:`.bounds`); a checked build also tests every index at run
time, for what the analysis cannot decide.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from ..config import checked_builds
from ..errors import BuildError, error_reason
from ..results import Built
from ..tvm_compat import compile as tvm_compile
from ..tvm_compat import (
    compile_checked,
    prefer_nvcc_without_nvrtc,
    structural_equal,
    structural_hash,
    version,
)
from .bounds import check_bounds
from .call import bound_function
from .device_code import device_code_of, failed_kernel_compile
from .inspect import (
    as_module,
    extern_symbols,
    is_relax,
    signatures,
    unbound_gpu_functions,
)
from .source import generated_source
from .targets import is_gpu_target, resolve_target


class BuiltRuntime:
    """What a :class:`~mlc_jupyter.results.Built` calls for its functions and generated code."""

    bound_function = staticmethod(bound_function)
    generated_source = staticmethod(generated_source)


_CACHE: dict[str, Built] = {}


def cache_key(mod: Any, target: Any, checked: bool = False) -> str:
    """``hash|target|tvm version[|checked]`` for an IRModule and a resolved target."""
    return f"{structural_hash(mod):x}|{target}|{version()}" + ("|checked" if checked else "")


def clear_cache() -> None:
    """Forget every cached build."""
    _CACHE.clear()


def build_module(
    mod: Any, target: Any = None, *, force: bool = False, checked: bool | None = None
) -> Built:
    """Build ``mod`` (PrimFunc, TensorIR IRModule or Relax module) for ``target``.

    ``checked`` makes every buffer index be tested at run time, so a bad index raises
    :class:`~mlc_jupyter.errors.OutOfBoundsError` instead of corrupting memory (``None``: the
    session's setting, :func:`mlc_jupyter.config.checked_builds`; CPU targets only).
    Returns a :class:`~mlc_jupyter.results.Built` whose functions can be called directly.
    Raises ``OutOfBoundsError`` when TVM proves an index leaves its buffer (nothing is built),
    ``BuildError`` for a GPU kernel with unbound loops and for TVM build failures.
    """
    try:
        mod = as_module(mod)
    except TypeError as err:
        raise BuildError(str(err)) from None
    target = resolve_target(target)
    checked = checked_builds() if checked is None else bool(checked)
    key = cache_key(mod, target, checked)
    hit = _CACHE.get(key)
    if hit is not None and not force and structural_equal(hit.mod, mod):
        return dataclasses.replace(hit, cached=True)
    relax = is_relax(mod)
    if is_gpu_target(target) and not relax:
        unbound = unbound_gpu_functions(mod)
        if unbound:
            raise BuildError(
                f"{', '.join(unbound)}: loops are not bound to blockIdx/threadIdx, so TVM would "
                f"build a host function instead of a {target.kind.name} kernel",
                hint="split the loop and sch.bind(outer, 'blockIdx.x'); sch.bind(inner, "
                "'threadIdx.x')",
            )
    if checked and is_gpu_target(target):
        raise BuildError(
            "checked builds run on the CPU only", hint="build without --checked for a GPU"
        )
    check_bounds(mod)
    if target.kind.name == "cuda":
        prefer_nvcc_without_nvrtc()  # with a GPU present, TVM compiles the kernels itself
    start = time.perf_counter()
    try:
        executable = (compile_checked if checked else tvm_compile)(mod, target)
    except Exception as err:  # noqa: BLE001 - TVM raises many types; show one line
        kernel_error = failed_kernel_compile(err)
        if kernel_error is not None:
            raise kernel_error from None
        raise BuildError(f"TVM could not build the module: {error_reason(err)}") from None
    device_code = device_code_of(executable, target) if target.kind.name == "cuda" else None
    built = Built(
        mod=mod,
        target=target,
        executable=executable,
        signatures=signatures(mod),
        build_s=time.perf_counter() - start,
        relax=relax,
        extern_symbols=tuple(sorted(extern_symbols(mod))),
        key=key,
        device_code=device_code,
        runtime=BuiltRuntime(),
        checked=checked,
    )
    _CACHE[key] = built
    return built
