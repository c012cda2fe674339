"""Where a Relax model's time goes: each kernel's time per model call, from the VM itself.

TVM 0.27's Relax VM has no profiler of its own any more, but it calls an *instrument* before and
after every instruction. Timing each call of a kernel between the two gives its share of the
model. The instrument is Python, so each call costs a microsecond or two more than it would;
the model's latency is measured separately, without it.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

from ..compilation import device_for
from ..compilation.cached_build import Built
from ..compilation.call import prepare, relax_vm, to_device
from ..compilation.default_schedule import PACKED_SUFFIX
from ..errors import TimingError
from ..tvm_compat import prim_func_type
from .machine import cpu_limits
from .reference import is_torch_module
from .timer import as_built, estimate_flops, model_inputs

#: About how long the instrumented runs of a profile take, at least one run (a slow model gets
#: fewer runs than asked for).
PROFILE_BUDGET_S = 2.0
#: The VM's own instructions (allocations, shape checks ...); every other call is a kernel.
VM_PREFIX = "vm."


@dataclass(frozen=True)
class KernelTime:
    """One kernel of a Relax build in a per-kernel profile: calls and seconds per model call."""

    name: str
    calls: int
    seconds: float
    flops: float | None = None

    @property
    def gflops(self) -> float | None:
        return self.flops / self.seconds / 1e9 if self.flops and self.seconds else None


@dataclass(frozen=True)
class KernelProfile:
    """Where a Relax build's time goes: each kernel's time per model call, slowest first.

    ``overhead_s`` is the time of the VM's own instructions (allocations, shape checks): the
    model's latency ``total_s``, measured without instrumentation, minus the kernels' time.
    """

    name: str
    kernels: tuple[KernelTime, ...]
    overhead_s: float
    total_s: float | None
    runs: int
    #: this machine's fp32 peak for the build's target (GFLOP/s), when known
    peak_gflops: float | None = None

    @property
    def kernel_s(self) -> float:
        return sum(k.seconds for k in self.kernels)

    def share(self, kernel: KernelTime) -> float:
        """The kernel's part of the time of all kernels and VM instructions together."""
        whole = self.kernel_s + self.overhead_s
        return kernel.seconds / whole if whole else 0.0


def profile_kernels(
    mod_or_built: Any,
    target: Any = None,
    *,
    args: Any = None,
    runs: int = 5,
    name: str = "",
    seed: int = 0,
) -> KernelProfile:
    """Time every kernel call of a Relax build's ``main`` over up to ``runs`` runs (after a
    warm-up; fewer when they would take more than ``PROFILE_BUDGET_S``).

    Kernels are the module's PrimFuncs; the VM's own work (allocations, shape checks,
    reshapes) is the model's uninstrumented latency minus the kernels' time.
    """
    built: Built = as_built(mod_or_built, target)
    if not built.relax:
        raise TimingError(
            "a per-kernel profile needs a Relax model (a TensorIR module is one kernel)",
            hint="%mlc_time times TensorIR functions on their own",
        )
    sig = prepare(built, None)
    inputs = model_inputs(built, sig, args, seed)
    tensors, _ = to_device(built, sig, tuple(inputs))
    vm = relax_vm(built)
    main = vm[sig.name]
    known = {
        gv.name_hint.removesuffix(PACKED_SUFFIX)
        for gv, f in built.mod.functions_items()
        if _is_prim(f)
    }
    seconds: dict[str, float] = {}
    calls: dict[str, int] = {}
    started: list[float] = []

    def instrument(func: Any, symbol: str, before: bool, ret: Any, *call_args: Any) -> int:
        if before:
            started.append(time.perf_counter())
        else:
            symbol = str(symbol).removesuffix(PACKED_SUFFIX)
            seconds[symbol] = seconds.get(symbol, 0.0) + time.perf_counter() - started.pop()
            calls[symbol] = calls.get(symbol, 0) + 1
        return 0

    start = time.perf_counter()
    main(*tensors)  # warm-up: first calls allocate and load
    once = time.perf_counter() - start
    runs = max(1, min(runs, math.ceil(PROFILE_BUDGET_S / max(once, 1e-9))))
    vm.set_instrument(instrument)
    for _ in range(runs):
        main(*tensors)
    device = device_for(built.target)
    repeat = 3 if once * 3 < PROFILE_BUDGET_S else 1
    timer = relax_vm(built).time_evaluator(sig.name, device, number=1, repeat=repeat)
    total = timer(*tensors)
    rows = [
        KernelTime(
            symbol,
            calls[symbol] // runs,
            secs / runs,
            _flops(built, symbol, calls[symbol] // runs),
        )
        for symbol, secs in seconds.items()
        if symbol in known or not symbol.startswith(VM_PREFIX)
    ]
    rows.sort(key=lambda k: -k.seconds)
    # What the VM does between kernels, as the uninstrumented latency shows it (the
    # instrument's own cost would dominate it for a small model).
    overhead = max(0.0, float(total.median) - sum(k.seconds for k in rows))
    return KernelProfile(
        name=name or "the model",
        kernels=tuple(rows),
        overhead_s=overhead,
        total_s=float(total.median),
        runs=runs,
        peak_gflops=_peak(built),
    )


def is_relax_model(variant: Any, target: Any = None) -> bool:
    """True for a variant that builds into a Relax module (not a kernel, not a PyTorch model)."""
    return not is_torch_module(variant) and as_built(variant, target).relax


def _peak(built: Built) -> float | None:
    """The fp32 peak of all cores at the widest vectors (measured once per machine, cached)."""
    limits = cpu_limits(built.target, ["float32"])
    return limits.peak() if limits is not None else None


def _is_prim(func: Any) -> bool:
    return isinstance(func, prim_func_type())


def _flops(built: Built, kernel: str, calls: int) -> float | None:
    names = {gv.name_hint for gv, _ in built.mod.functions_items()}
    if kernel not in names and kernel + PACKED_SUFFIX in names:
        kernel += PACKED_SUFFIX
    flops = estimate_flops(built.mod, kernel)  # None for a kernel the build made itself
    return flops * calls if flops else None
