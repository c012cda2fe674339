"""Where a Relax model's time goes: each kernel's time per model call, from the VM itself.

TVM 0.27's Relax VM has no profiler of its own any more, but it calls an *instrument* before and
after every instruction. Timing each call of a kernel between the two gives its share of the
model. The instrument is Python, so each call costs a microsecond or two more than it would;
the model's latency is measured separately, without it.

Each kernel is also put on this machine's roofline, as Intel Advisor or Nsight Compute's "speed
of light" do: its bytes moved (at least its arguments, read or written once), its arithmetic
intensity, whether that is below the ridge point (memory-bound) or above it (compute-bound), and
its rate as a share of the roof over it, ``min(peak, intensity x bandwidth)``. A batch-1 dense
layer that streams its weights at the memory bandwidth is at its roof, not at "2% of peak".
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass
from typing import Any

from ..compilation import device_for, is_cpu, is_cuda, target_kind
from ..compilation.cached_build import Built
from ..compilation.call import prepare, relax_vm, to_device
from ..compilation.default_schedule import PACKED_SUFFIX
from ..errors import TimingError
from ..tvm_compat import prim_func_type
from .gpu_limits import device_limits
from .machine import MachineLimits, kernel_cores
from .reference import is_torch_module
from .timer import argument_bytes, argument_dtypes, as_built, estimate_flops, model_inputs

#: About how long the instrumented runs of a profile take, at least one run (a slow model gets
#: fewer runs than asked for).
PROFILE_BUDGET_S = 2.0
#: The VM's own instructions (allocations, shape checks ...); every other call is a kernel.
VM_PREFIX = "vm."
#: About what the Python instrument adds to each kernel call it times.
INSTRUMENT_S = 2e-6
#: How much longer than the uninstrumented model the kernels may take before the profile is
#: called disturbed (the runs of a quiet machine vary by less).
DISTURBED_EXCESS = 0.15


@dataclass(frozen=True)
class KernelTime:
    """One kernel of a Relax build in a per-kernel profile: calls and seconds per model call."""

    name: str
    calls: int
    seconds: float
    flops: float | None = None
    #: bytes its arguments hold, times its calls: the least memory traffic per model call
    bytes: float | None = None

    @property
    def gflops(self) -> float | None:
        return self.flops / self.seconds / 1e9 if self.flops and self.seconds else None

    @property
    def gbs(self) -> float | None:
        """GB/s of its arguments' bytes (a lower bound of the traffic it made)."""
        return self.bytes / self.seconds / 1e9 if self.bytes and self.seconds else None

    @property
    def intensity(self) -> float | None:
        """FLOPs per byte of its arguments: where it sits on the roofline."""
        return self.flops / self.bytes if self.flops and self.bytes else None


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
    #: this machine's fp32 peak for the build's target (GFLOP/s, on the cores its kernels use),
    #: when known
    peak_gflops: float | None = None
    #: this machine's memory bandwidth for the build's target (GB/s), when known
    bandwidth_gbs: float | None = None
    #: the cores the peak and bandwidth are for (0 for a GPU: one device)
    cores: int = 0
    #: why there is no roof to measure the kernels against (empty when there is one)
    no_roof: str = ""
    #: whether the limits were measured on a quiet machine (if not, they may read low)
    limits_quiet: bool = True

    @property
    def kernel_s(self) -> float:
        return sum(k.seconds for k in self.kernels)

    @property
    def disturbed(self) -> bool:
        """Whether the kernels alone took clearly longer than the whole model timed without the
        profiler: the machine was busy during the profile, so the kernels' rates read low."""
        if not self.total_s:
            return False
        instrument_s = INSTRUMENT_S * sum(k.calls for k in self.kernels)
        return self.kernel_s > self.total_s * (1 + DISTURBED_EXCESS) + instrument_s

    def share(self, kernel: KernelTime) -> float:
        """The kernel's part of the time of all kernels and VM instructions together."""
        whole = self.kernel_s + self.overhead_s
        return kernel.seconds / whole if whole else 0.0

    @property
    def ridge(self) -> float | None:
        """The intensity (flop/byte) where the memory roof meets the compute roof."""
        if self.peak_gflops and self.bandwidth_gbs:
            return self.peak_gflops / self.bandwidth_gbs
        return None

    def bound(self, kernel: KernelTime) -> str | None:
        """``memory`` below the ridge (or for a kernel without FLOPs: a copy, a reshape),
        ``compute`` at or above it; ``None`` when the limits or its bytes are unknown."""
        ridge = self.ridge
        if ridge is None or not kernel.bytes:
            return None
        intensity = kernel.intensity
        return "compute" if intensity is not None and intensity >= ridge else "memory"

    def roof_share(self, kernel: KernelTime) -> float | None:
        """Its rate over the roof above it, ``min(peak, intensity x bandwidth)``: near 1 is as
        fast as this machine allows (above 1 its arguments stayed in a cache between calls)."""
        bound = self.bound(kernel)
        if bound == "compute" and kernel.gflops and self.peak_gflops:
            return kernel.gflops / self.peak_gflops
        if bound == "memory" and kernel.gbs and self.bandwidth_gbs:
            # achieved / (intensity x bandwidth) = bytes per second / bandwidth
            return kernel.gbs / self.bandwidth_gbs
        return None


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
    warm-up; fewer when they would take more than ``PROFILE_BUDGET_S``). Each kernel's time is
    its median over the runs, so one run slowed by another process does not move it (the
    shares whole-model tuning splits its budget by come from here).

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
    per_run: list[dict[str, float]] = []  # each run's seconds in each kernel
    calls: dict[str, int] = {}
    started: list[float] = []

    def instrument(func: Any, symbol: str, before: bool, ret: Any, *call_args: Any) -> int:
        if before:
            started.append(time.perf_counter())
        else:
            symbol = str(symbol).removesuffix(PACKED_SUFFIX)
            seconds = per_run[-1]
            seconds[symbol] = seconds.get(symbol, 0.0) + time.perf_counter() - started.pop()
            calls[symbol] = calls.get(symbol, 0) + 1
        return 0

    start = time.perf_counter()
    main(*tensors)  # warm-up: first calls allocate and load
    once = time.perf_counter() - start
    runs = max(1, min(runs, math.ceil(PROFILE_BUDGET_S / max(once, 1e-9))))
    vm.set_instrument(instrument)
    for _ in range(runs):
        per_run.append({})
        main(*tensors)
    device = device_for(built.target)
    repeat = 3 if once * 3 < PROFILE_BUDGET_S else 1
    timer = relax_vm(built).time_evaluator(sig.name, device, number=1, repeat=repeat)
    total = timer(*tensors)
    rows = [
        KernelTime(
            symbol,
            calls[symbol] // runs,
            statistics.median(run.get(symbol, 0.0) for run in per_run),
            _flops(built, symbol, calls[symbol] // runs),
            _bytes(built, symbol, calls[symbol] // runs),
        )
        for symbol in calls
        if symbol in known or not symbol.startswith(VM_PREFIX)
    ]
    rows.sort(key=lambda k: -k.seconds)
    # What the VM does between kernels, as the uninstrumented latency shows it (the
    # instrument's own cost would dominate it for a small model).
    overhead = max(0.0, float(total.median) - sum(k.seconds for k in rows))
    limits, no_roof = _limits(built)
    cores = 0 if limits is not None and limits.is_gpu else kernel_cores(built.target)
    return KernelProfile(
        name=name or "the model",
        kernels=tuple(rows),
        overhead_s=overhead,
        total_s=float(total.median),
        runs=runs,
        peak_gflops=limits.peak(cores) if limits else None,
        bandwidth_gbs=limits.bandwidth(cores) if limits else None,
        cores=cores,
        no_roof=no_roof,
        limits_quiet=limits.quiet if limits else True,
    )


def builds_relax_module(variant: Any, target: Any = None) -> bool:
    """True for a variant that builds into a Relax module (not a kernel, not a PyTorch model); it
    builds the variant (cached) to tell."""
    return not is_torch_module(variant) and as_built(variant, target).relax


def _limits(built: Built) -> tuple[MachineLimits | None, str]:
    """This machine's limits for the build's target (measured once, cached), or why none."""
    floats = sorted({d for d in argument_dtypes(built.mod) if d.startswith(("float", "bfloat"))})
    limits = device_limits(built.target, floats or ["float32"])
    if limits is not None and limits.peak() and limits.bandwidth():
        return limits, ""
    if not (is_cpu(built.target) or is_cuda(built.target)):
        kind = target_kind(built.target)
        return None, f"no roof: the limits of {kind} devices are not measured (CPU and CUDA are)"
    if any(d != "float32" for d in floats):
        return None, f"no roof: the peak is an fp32 figure and the kernels use {', '.join(floats)}"
    return None, "no roof: this machine's limits could not be measured (try %mlc_machine)"


def _is_prim(func: Any) -> bool:
    return isinstance(func, prim_func_type())


def _function(built: Built, kernel: str) -> str | None:
    """The module's name of the kernel the VM called (``None``: one the build made itself)."""
    names = {gv.name_hint for gv, _ in built.mod.functions_items()}
    return next((n for n in (kernel, kernel + PACKED_SUFFIX) if n in names), None)


def _flops(built: Built, kernel: str, calls: int) -> float | None:
    name = _function(built, kernel)
    flops = estimate_flops(built.mod, name) if name else None
    return flops * calls if flops else None


def _bytes(built: Built, kernel: str, calls: int) -> float | None:
    name = _function(built, kernel)
    size = argument_bytes(built.mod, name) if name else None
    return size * calls if size else None
