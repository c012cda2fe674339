"""Time the untuned and the tuned module the same way, so the speed-up compares like with like.

The latencies a tuning result reports are :func:`mlc_jupyter.measure.time_module`'s (cached
build, ``time_evaluator`` with calibrated loops, median of 5) on the calling thread: exactly what
``%mlc_time`` measures for the same module right after, and a measurement of its own, not the
figure that chose the winner (the best of several noisy figures reads low).

Close contenders (the top few records of a search) are timed *in turns*
(:func:`~mlc_jupyter.measure.turns.in_turns`): one calibrated sample of each, round after round.
A slow spell of the machine (another process, a busy host under a virtual machine;
docs/DEVELOPING.md, "Measured while building the tuner") then slows every contender alike
instead of deciding which one wins.

A model's kernels are timed *cold* (:class:`KernelSamplers`, ``cold``; the search's candidates
too, :class:`~.search.runner.ModuleClock`): in the model each kernel finds its weights in memory,
since the layers between two calls evict them, while a kernel called again and again finds them
in its caches. A schedule that wins warm can lose cold, and in the model
(``bench/results/bench_tune_cold_choice_*``).
"""

from __future__ import annotations

import itertools
import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..compilation import build_module, device_for, is_cpu, wait_for_saved_builds
from ..compilation.call import prepare, relax_vm, to_device
from ..compilation.remote import RemoteModules
from ..errors import MLCError
from ..measure import Sampling, time_module
from ..measure.inputs import random_inputs
from ..measure.turns import Sampler, in_turns
from ..tvm_compat import kernel_timer, remove_weight_layout_rewrite, tensor_type, tvm
from .search.threads import on_measure_thread, target_cores

__all__ = [
    "COMPARE_ROUNDS",
    "KEEP_MARGIN",
    "KernelSamplers",
    "ModelTimings",
    "ModelVerdict",
    "Sampler",
    "baseline_timing",
    "clearly_faster",
    "compare_in_turns",
    "final_model_timing",
    "final_timing",
    "in_turns",
    "kernel_module",
    "kernel_sampler",
    "time_remote",
]


def _on_measure_thread(target: Any, fn: Any, *args: Any) -> Any:
    return on_measure_thread(target_cores(target), fn, *args)


def final_timing(
    mod: Any, target: Any, name: str = "main", sampling: Sampling | None = None
) -> Any:
    """The :class:`~mlc_jupyter.measure.timer.Timing` of ``mod[name]`` as ``%mlc_time`` takes it
    (``None`` when it cannot be timed, a Relax module that needs inputs it cannot make, say)."""
    try:
        timing = time_module(mod, target, func_name=name, sampling=sampling or Sampling())
    except MLCError:
        return None
    return timing if timing.median_s is not None else None


#: An untuned kernel at least this slow a call is timed by one call: a sample of ``%mlc_time``'s
#: five would cost minutes for a large naive matmul, and the speed-up it gives needs no more
#: precision than one call has at that length.
SLOW_BASELINE_S = 0.25
#: One call, uncalibrated (``time_evaluator`` still makes its warm-up call first).
ONE_CALL = Sampling(repeat=1, min_repeat_ms=0.0, number=1)


def baseline_timing(mod: Any, target: Any, name: str = "main") -> Any:
    """The untuned workload's :class:`~mlc_jupyter.measure.timer.Timing`, bounded in time.

    One call first: a slow kernel keeps that figure, a quick one is timed as ``%mlc_time``
    does (:func:`final_timing`).
    """
    probe = final_timing(mod, target, name, ONE_CALL)
    if probe is None or probe.median_s >= SLOW_BASELINE_S:
        return probe
    return final_timing(mod, target, name)


def time_remote(spec: Any, mods: Sequence[Any], target: Any, name: str = "main") -> list[Any]:
    """Median seconds of ``name`` of each module on the RPC server of ``spec``, in one session.

    ``None`` for a module that cannot be timed there (an untuned GPU workload has no thread
    bindings, so it does not build for a GPU) or when the server cannot be had any more: the
    search's records are kept either way.
    """
    out: list[Any] = [None] * len(mods)
    try:
        with RemoteModules(spec) as remote:
            for index, mod in enumerate(mods):
                try:
                    out[index] = time_module(mod, target, func_name=name, remote=remote).median_s
                except MLCError:
                    continue
    except MLCError:
        pass
    return out


#: Argument buffer sets a group of kernels rotates through (see :class:`KernelSamplers`).
ARG_SETS = 3


class KernelSamplers:
    """Samplers of kernels of one workload (or of whole Relax models of one signature) that
    time on the *same* argument buffers.

    Where a buffer lands in memory can change a kernel's speed by a good margin (docs/
    DEVELOPING.md, "Measured while building the tuner"). Kernels given their own buffers would
    race on that lottery; here every sampler uses set ``k`` on its ``k``-th sample, cycling over
    ``arg_sets`` sets, so in :func:`in_turns` each round compares the kernels on the same buffers
    and the median skips an unlucky set.

    ``cold``: a kernel's sample is the median of single calls, each after every argument but
    the first is flushed from the CPU caches (a model's kernel reads its weights from memory);
    whole models, GPU kernels and kernels with scalar arguments are timed warm.
    """

    def __init__(
        self,
        target: Any,
        name: str = "main",
        min_sample_s: float = 0.05,
        arg_sets: int = ARG_SETS,
        cold: bool = False,
    ) -> None:
        self.target = target
        self.name = name
        self.min_sample_s = min_sample_s
        self.arg_sets = max(1, arg_sets)
        self.cold = cold
        self._sets: dict[str, list[list[Any]]] = {}

    def add(self, mod: Any) -> Sampler:
        """A :data:`Sampler` of ``mod[name]`` run on the tuner's measuring thread.

        Raises what building or the first call raises (a record that no longer builds).
        """
        sample = _on_measure_thread(self.target, self._calibrate, mod)
        return lambda: _on_measure_thread(self.target, sample)

    def _calibrate(self, mod: Any) -> Sampler:
        built = build_module(mod, self.target)
        wait_for_saved_builds()  # the background link of a new build would share the cores
        sig = prepare(built, self.name)
        key = repr([(p.shape, p.dtype) for p in sig.params])
        if key not in self._sets:
            inputs = tuple(random_inputs(sig, 0))
            self._sets[key] = [to_device(built, sig, inputs)[0] for _ in range(self.arg_sets)]
        sets = self._sets[key]
        runtime = relax_vm(built) if sig.relax else built.executable.mod
        func = runtime[sig.name]
        device = device_for(built.target)
        func(*sets[0])  # the first call pays one-time costs
        device.sync()
        start = time.perf_counter()
        func(*sets[0])
        device.sync()  # a GPU call returns at launch: time the kernel, not the launch
        once = max(time.perf_counter() - start, 1e-9)
        number = max(1, min(1 << 20, math.ceil(self.min_sample_s / once)))
        turn = itertools.cycle(range(len(sets)))
        if self.cold and _flushable(built, sets[0]):
            calls = max(3, min(MAX_COLD_CALLS, number))
            cold = kernel_timer(runtime, sig.name, device, calls, cold=True)
            return lambda: statistics.median(cold(*sets[next(turn)]).results)
        evaluator = runtime.time_evaluator(sig.name, device, number=number, repeat=1)
        return lambda: float(evaluator(*sets[next(turn)]).mean)


#: The most single calls one cold sample makes (each after a cache flush).
MAX_COLD_CALLS = 200


def _flushable(built: Any, args: Sequence[Any]) -> bool:
    """Whether a cold sample can flush ``args``: a CPU kernel (not a model) whose arguments
    are all tensors (TVM's flush reads every argument but the first as one)."""
    return (
        not built.relax and is_cpu(built.target) and all(isinstance(a, tensor_type()) for a in args)
    )


def kernel_sampler(
    mod: Any, target: Any, name: str = "main", min_sample_s: float = 0.05
) -> Sampler:
    """A :data:`Sampler` of one kernel (its own buffer sets; see :class:`KernelSamplers`)."""
    return KernelSamplers(target, name, min_sample_s).add(mod)


def kernel_module(func: Any) -> Any:
    """A kernel as a model runs it: the weight packing it carries runs at build time, so it is
    left out of the kernel's time (as MetaSchedule's builder leaves it out of a candidate's)."""
    return remove_weight_layout_rewrite(
        tvm().IRModule({"main": func.with_attr("global_symbol", "main")})
    )


#: A schedule replaces the one a kernel already has only when it is faster by more than this
#: share (a tie within the noise of the timing keeps what is there).
KEEP_MARGIN = 0.02
#: Rounds of :func:`compare_in_turns`.
COMPARE_ROUNDS = 5


def compare_in_turns(
    before: Any, after: Any, target: Any, cold: bool = False
) -> tuple[float | None, float | None]:
    """Seconds per call of ``before["main"]`` and ``after["main"]``, timed in turns on shared
    buffers (``None, None`` when either cannot be built or called); ``cold`` as
    :class:`KernelSamplers` has it."""
    samplers = KernelSamplers(target, cold=cold)
    try:
        both = [samplers.add(before), samplers.add(after)]
    except MLCError:
        return None, None
    first, second = in_turns(both, COMPARE_ROUNDS)
    return first, second


def clearly_faster(new_s: float | None, old_s: float | None) -> bool:
    """Whether ``new_s`` beats ``old_s`` by more than :data:`KEEP_MARGIN` (both known)."""
    return new_s is not None and old_s is not None and new_s < old_s * (1 - KEEP_MARGIN)


@dataclass(frozen=True)
class ModelTimings:
    """The default and the tuned model timed in turns (``Timing``\\ s, ``None`` when the model
    cannot run here), and the fp32 peak that bounds the default build (``None`` when unknown:
    on an RPC server, on other data; or when the memory's bandwidth bounds it instead)."""

    default: Any
    tuned: Any
    peak_gflops: float | None = None


@dataclass(frozen=True)
class ModelVerdict:
    """The default and the tuned model timed in turns (``Timing``\\ s, ``None`` when the model
    cannot run here), whether the default build is kept, and why (``notes``); ``peak_gflops``
    as :class:`ModelTimings` has it."""

    default: Any
    tuned: Any
    keep_default: bool = False
    notes: tuple[str, ...] = ()
    peak_gflops: float | None = None


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms"


def _slower_than_kernels_say(default: Any, tuned: Any, expected_gain_s: float) -> bool:
    """The kernels timed faster in turns, yet the whole tuned model timed slower."""
    if default is None or tuned is None or not default.median_s or not tuned.median_s:
        return False
    return expected_gain_s > 0 and tuned.median_s > default.median_s


def _measurably_slower(default: Any, tuned: Any) -> bool:
    """Tuned slower than default by more than their runs vary (``%mlc_time``'s rule)."""
    if default is None or tuned is None or default.std_s is None or tuned.std_s is None:
        return False
    return tuned.median_s - default.median_s > tuned.std_s + default.std_s


def final_model_timing(
    time_both: Callable[[], ModelTimings],
    expected_gain_s: float,
    may_retime: Callable[[float], bool] = lambda _seconds: True,
) -> ModelVerdict:
    """Time the default and the tuned model (``time_both``, in turns) and settle what to report.

    ``expected_gain_s`` is what the kernels' own timings in turns add up to (calls x (default -
    tuned) per kernel kept tuned). A whole model timed slower than that says is timed again
    (a busy spell can slow one of the two more than the other); still slower, the result says
    so. ``may_retime(seconds)`` says whether a second timing as long as the first still fits
    the budget (else the result says so at once). A tuned model measurably slower than the
    default build is not kept: the default build is, with a note (the kernels' records stay in
    their work dirs).
    """
    started = time.perf_counter()
    timed = time_both()
    notes: list[str] = []
    retime = may_retime(time.perf_counter() - started)
    if retime and _slower_than_kernels_say(timed.default, timed.tuned, expected_gain_s):
        timed = time_both()
    default, tuned, peak = timed.default, timed.tuned, timed.peak_gflops
    if _slower_than_kernels_say(default, tuned, expected_gain_s):
        notes.append(
            f"its kernels timed {_ms(expected_gain_s)} a call faster in turns, yet the whole "
            f"tuned model timed slower than the default build ({_ms(tuned.median_s)} "
            f"against {_ms(default.median_s)}): what the kernels gain is lost around them "
            "here (their layouts, the VM, or a machine busy while the models ran)"
        )
    if _measurably_slower(default, tuned):
        notes.append(
            f"kept the default build: the tuned model timed slower ({_ms(tuned.median_s)} "
            f"±{tuned.spread:.0%} against {_ms(default.median_s)} ±{default.spread:.0%}, in "
            "turns); the tuned kernels' records stay in their work dirs for a later run"
        )
        return ModelVerdict(default, tuned, True, tuple(notes), peak)
    return ModelVerdict(default, tuned, False, tuple(notes), peak)
