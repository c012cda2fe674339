"""Time the untuned and the tuned module the same way, so the speed-up compares like with like."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tvm_compat import tvm


def _random_args(params: list[tuple[tuple[int, ...], str]], device: Any) -> list[Any]:
    _tvm = tvm()
    rng = np.random.default_rng(0)
    out = []
    for shape, dtype in params:
        if dtype.startswith("float"):
            data = rng.uniform(-1, 1, size=shape).astype(dtype)
        else:
            data = rng.integers(0, 8, size=shape).astype(dtype)
        out.append(_tvm.runtime.tensor(data, device=device))
    return out


def _median_seconds(timer: Any, args: list[Any]) -> float:
    probe = float(timer(1, 1)(*args).mean)
    number = max(1, min(1000, int(0.05 / max(probe, 1e-7))))
    results = timer(number, 5)(*args).results
    return float(np.median([float(x) for x in results]))


def tir_params(func: Any) -> list[tuple[tuple[int, ...], str]]:
    """Shapes and dtypes of a PrimFunc's buffer parameters."""
    from ..tvm_compat import meta_schedule

    infos = meta_schedule().arg_info.ArgInfo.from_prim_func(func)
    return [(tuple(int(x) for x in info.shape), str(info.dtype)) for info in infos]


def time_tir(mod: Any, target: Any, name: str = "main") -> float:
    """Median seconds of one call of ``mod[name]`` built for ``target``, on the host CPU."""
    _tvm = tvm()
    rt_mod = _tvm.compile(mod, target=target)
    rt_mod = getattr(rt_mod, "mod", rt_mod)
    device = _tvm.cpu(0)
    args = _random_args(tir_params(mod[name]), device)
    return _median_seconds(
        lambda n, r: rt_mod.time_evaluator(name, device, number=n, repeat=r), args
    )


def relax_params(func: Any) -> list[tuple[tuple[int, ...], str]] | None:
    """Static shapes and dtypes of a Relax function's parameters (``None`` if any is dynamic)."""
    out = []
    for param in func.params:
        ty = param.struct_info if hasattr(param, "struct_info") else param.ty
        try:
            shape = tuple(int(x) for x in ty.shape)
        except (TypeError, AttributeError):
            return None
        out.append((shape, str(ty.dtype)))
    return out


def time_relax(mod: Any, target: Any, executable: Any = None) -> float | None:
    """Median seconds of one call of the Relax ``main`` (``None`` with dynamic shapes)."""
    _tvm = tvm()
    params = relax_params(mod["main"])
    if params is None:
        return None
    if executable is None:
        executable = _tvm.compile(mod, target=target)
    device = _tvm.cpu(0)
    vm = _tvm.relax.VirtualMachine(executable, device)
    args = _random_args(params, device)
    return _median_seconds(lambda n, r: vm.time_evaluator("main", device, number=n, repeat=r), args)
