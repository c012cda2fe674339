"""Where a Relax model's time goes: each kernel's time per model call, from the VM itself.

TVM 0.27's Relax VM has no profiler of its own any more, but it calls an *instrument* before and
after every instruction. One run under it records which kernel is called with which arguments;
each call is then timed on its own arguments by TVM's timer, as the old graph debug executor
timed each operator, with the weights flushed from the caches first, as MetaSchedule's CPU
runner does. The model's latency is timed separately, as a whole.

Each kernel is also put on this machine's roofline, as Intel Advisor or Nsight Compute's "speed
of light" do: its bytes moved (at least its arguments, read or written once), its arithmetic
intensity, whether that is below the ridge point (memory-bound) or above it (compute-bound), and
its rate as a share of the roof over it, ``min(peak, intensity x bandwidth)``. A batch-1 dense
layer that streams its weights at the memory bandwidth is at its roof, not at "2% of peak".
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

from ..compilation import device_for, is_cpu, is_cuda, target_kind, wait_for_saved_builds
from ..compilation.cached_build import Built
from ..compilation.call import prepare, relax_vm, to_device
from ..compilation.default_schedule import PACKED_SUFFIX
from ..errors import TimingError
from ..tvm_compat import kernel_library, kernel_timer, tensor_type
from .gpu_limits import device_limits
from .machine import (
    QUIET_SHARE,
    MachineLimits,
    checked_against,
    kernel_cores,
    others_cpu_seconds,
)
from .reference import is_torch_module
from .timer import (
    argument_bytes,
    argument_dtypes,
    as_built,
    estimate_flops,
    let_threads_settle,
    model_inputs,
)
from .turns import Sampler, in_turns

#: About how long a profile's samples take, at least one per kernel call (a slow model gets
#: fewer samples than asked for).
PROFILE_BUDGET_S = 2.0
#: How much longer than the whole model the kernels may take before the profile says their
#: rows do not add up (the samples of a quiet machine vary by less).
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

    ``beyond_kernels_s`` is the model's latency ``total_s``, measured without instrumentation,
    minus the kernels' times alone. It is not only the VM's own instructions (allocations, shape
    checks): a kernel timed alone finds its input in the cache, where the kernel before it left
    it, and inside the model an input larger than the cache (a CNN's first activations) comes
    from memory.
    """

    name: str
    kernels: tuple[KernelTime, ...]
    beyond_kernels_s: float
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
    #: when and under what load the limits were measured
    limits_measured: str = ""
    #: the share of one core other processes used while the kernels were timed (``None``:
    #: unknown, no ``/proc/stat``)
    others_share: float | None = None

    @property
    def kernel_s(self) -> float:
        return sum(k.seconds for k in self.kernels)

    @property
    def disturbed(self) -> bool:
        """Whether the kernels alone took clearly longer than the whole model: their rows do not
        add up to the model's time (:attr:`excess_reason` says why)."""
        if not self.total_s:
            return False
        return self.kernel_s > self.total_s * (1 + DISTURBED_EXCESS)

    @property
    def busy(self) -> bool:
        """Whether other processes used the CPU while the kernels were timed."""
        return self.others_share is not None and self.others_share >= QUIET_SHARE

    @property
    def excess_reason(self) -> str:
        """Why the kernels took longer than the whole model, as measured (empty when they
        did not)."""
        if not self.disturbed or not self.total_s:
            return ""
        excess = f"the kernels took {self.kernel_s / self.total_s:.1f}x the whole model"
        if self.busy:
            return (
                f"{excess}: other processes used {self.others_share:.0%} of a core while they "
                "were timed, so their times read high and their rates low (rerun when the "
                "machine is quiet)"
            )
        quiet = (
            "the machine was quiet meanwhile"
            if self.others_share is not None
            else "other processes' use of the CPU is unknown here"
        )
        return (
            f"{excess}, and {quiet}: each kernel is timed alone with its weights flushed from "
            "the caches, and inside the model they were still cached from the previous call "
            "(the rows rank the kernels; their sum overstates the model's time)"
        )

    def share(self, kernel: KernelTime) -> float:
        """The kernel's part of the time of all kernels and VM instructions together."""
        whole = self.kernel_s + self.beyond_kernels_s
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
    """Each kernel's time per model call, over up to ``runs`` samples (fewer when they would take
    more than ``PROFILE_BUDGET_S``).

    One run of the model under the VM's instrument records each kernel call and its arguments;
    each call is then timed on those arguments by TVM's own timer, the weights flushed from the
    CPU caches first, as they arrive once per model call (the median of its samples). Timing the
    calls inside the model from the Python instrument made every kernel wait for Python: for
    the GIL, which any other Python thread of the process (a kernel's I/O, a background job) may
    hold for its whole switch interval, and for foreign thread pools still spinning after a
    PyTorch or NumPy reference. A small kernel's row then read ten times its real time.

    The calls are sampled in turns, one sample of each per round, the whole model last in each
    round: a slow spell of a shared machine (another process taking a core for a few
    milliseconds) then costs every row one sample, which the median drops, instead of every
    sample of the few kernels timed during it, which read twice their time and looked like
    kernels at half their roof, or of the whole model, whose time beyond its kernels then read
    as the VM's.

    Kernels are the build's compiled functions; the rest (the VM's own work, and inputs that come
    from memory inside the model) is the model's latency, timed as a whole, minus the kernels'.
    """
    built: Built = as_built(mod_or_built, target)
    if not built.relax:
        raise TimingError(
            "a per-kernel profile needs a Relax model (a TensorIR module is one kernel)",
            hint="%mlc_time times TensorIR functions on their own",
        )
    wait_for_saved_builds()  # a new build's background writer would share the cores
    sig = prepare(built, None)
    inputs = model_inputs(built, sig, args, seed)
    tensors, _ = to_device(built, sig, tuple(inputs))
    vm = relax_vm(built)
    main = vm[sig.name]
    start = time.perf_counter()
    main(*tensors)  # warm-up: first calls allocate and load
    once = time.perf_counter() - start
    recorded: list[tuple[str, tuple[Any, ...]]] = []  # each kernel call and its arguments

    def record(func: Any, symbol: str, before: bool, ret: Any, *call_args: Any) -> int:
        symbol = str(symbol)
        if before and kernel_library(built.executable, symbol) is not None:
            recorded.append((symbol, call_args))
        return 0

    vm.set_instrument(record)
    main(*tensors)
    runs = max(1, min(runs, math.ceil(PROFILE_BUDGET_S / max(once, 1e-9))))
    device = device_for(built.target)
    let_threads_settle()  # a PyTorch or NumPy reference timed just before leaves spinning threads
    others = others_cpu_seconds()
    clock = time.perf_counter()
    whole = relax_vm(built).time_evaluator(sig.name, device, number=1, repeat=1)
    *medians, total_s = in_turns(
        [_call_sampler(built, symbol, call_args, device) for symbol, call_args in recorded]
        + [lambda: float(whole(*tensors).median)],  # the whole model, in the same rounds
        runs,
    )
    seconds: dict[str, float] = {}
    calls: dict[str, int] = {}
    for (symbol, _), median in zip(recorded, medians, strict=True):
        kernel = symbol.removesuffix(PACKED_SUFFIX)
        seconds[kernel] = seconds.get(kernel, 0.0) + median
        calls[kernel] = calls.get(kernel, 0) + 1
    busy = others()
    elapsed = time.perf_counter() - clock
    rows = [
        KernelTime(
            kernel,
            count,
            seconds[kernel],
            _flops(built, kernel, count),
            _bytes(built, kernel, count),
        )
        for kernel, count in calls.items()
    ]
    rows.sort(key=lambda k: -k.seconds)
    beyond = max(0.0, total_s - sum(k.seconds for k in rows))
    limits, no_roof = _limits(built)
    cores = 0 if limits is not None and limits.is_gpu else kernel_cores(built.target)
    fastest = max(rows, key=lambda k: k.gflops or 0.0, default=None)
    if fastest is not None:  # a kernel above the peak: the peak read low, measure it again
        limits = checked_against(limits, fastest.gflops, cores, f"kernel {fastest.name}")
    return KernelProfile(
        name=name or "the model",
        kernels=tuple(rows),
        beyond_kernels_s=beyond,
        total_s=total_s,
        runs=runs,
        peak_gflops=limits.peak(cores) if limits else None,
        bandwidth_gbs=limits.bandwidth(cores) if limits else None,
        cores=cores,
        no_roof=no_roof,
        limits_quiet=limits.quiet if limits else True,
        limits_measured=limits.measured() if limits else "",
        others_share=busy / elapsed if busy is not None and elapsed > 0 else None,
    )


def _call_sampler(built: Built, symbol: str, call_args: tuple[Any, ...], device: Any) -> Sampler:
    """One sample of one recorded kernel call on its own arguments, by TVM's timer."""
    # the cache flush reads every argument but the first as a tensor (not a scalar)
    cold = is_cpu(built.target) and all(isinstance(a, tensor_type()) for a in call_args)
    timer = kernel_timer(kernel_library(built.executable, symbol), symbol, device, 1, cold)
    return lambda: float(timer(*call_args).median)


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
