"""MetaSchedule's runner, replaced by one that times candidates in the kernel's own process.

MetaSchedule's ``LocalRunner`` starts worker processes every round and times every candidate for
100 ms however slow it is. This runner times each candidate on the kernel-lifetime measuring
thread (:mod:`.threads`) as the measuring policy (:mod:`.policy`) decides, reusing argument
buffers between candidates. The driver re-times the top few at the end.

This module imports TVM at import time; import it lazily.
"""

from __future__ import annotations

import time
import traceback
from typing import Any

import numpy as np

from ...measure.inputs import random_array
from ...tvm_compat import derived_object, kernel_timer, metaschedule, tensor
from .candidate_builder import Pending, compile_all
from .policy import BRIEF_BUDGET_S, measure
from .run_state import BUILD_FAILED, INTERRUPTED, KNOWN_PREFIX, Shared
from .threads import on_measure_thread

ms = metaschedule()

#: MetaSchedule names every task's function ``main``.
ENTRY = "main"


class ModuleClock:
    """A :class:`~.policy.KernelClock` over a compiled candidate's entry function; ``cold``
    times single calls, each after every argument but the first is flushed from the CPU caches
    (a model's kernel finds its weights in memory)."""

    def __init__(self, rt_mod: Any, args: list[Any], device: Any, cold: bool = False) -> None:
        self.mod = getattr(rt_mod, "mod", rt_mod)  # tvm.compile returns an Executable
        self.func = self.mod[ENTRY]
        self.args = args
        self.device = device
        self.cold = cold

    def first_call(self) -> float:
        start = time.perf_counter()
        self.func(*self.args)
        self.device.sync()
        return time.perf_counter() - start

    def probe(self) -> float:
        evaluator = kernel_timer(self.mod, ENTRY, self.device, 1, self.cold)
        return float(evaluator(*self.args).mean)

    def repeats(self, number: int, repeat: int) -> list[float]:
        if self.cold:  # each reading the mean of ``number`` single calls, each flushed first
            calls = kernel_timer(self.mod, ENTRY, self.device, number * repeat, cold=True)
            secs = [float(x) for x in calls(*self.args).results]
            return [sum(secs[i : i + number]) / number for i in range(0, len(secs), number)]
        evaluator = self.mod.time_evaluator(ENTRY, self.device, number=number, repeat=repeat)
        return [float(x) for x in evaluator(*self.args).results]


def time_candidate(
    rt_mod: Any, args: list[Any], device: Any, best: float | None, budget_s: float,
    cold: bool = False,
) -> tuple[list[float], bool]:  # fmt: skip
    """The policy's timing of one compiled candidate (run it on the measuring thread)."""
    return measure(ModuleClock(rt_mod, args, device, cold), best, budget_s)


@derived_object
class _DoneFuture(ms.runner.PyRunnerFuture):
    def __init__(self, result: Any) -> None:
        super().__init__()
        self._result = result

    def done(self) -> bool:
        return True

    def result(self) -> Any:
        return self._result


def _alloc_args(args_info: list[Any], device: Any, cache: dict[str, list[Any]]) -> list[Any]:
    """Random argument tensors for a candidate, shared by every candidate of the same shapes."""
    key = repr([(tuple(int(x) for x in a.shape), str(a.dtype)) for a in args_info])
    if key not in cache:
        rng = np.random.default_rng(0)
        cache[key] = [
            tensor(random_array(rng, [int(x) for x in a.shape], str(a.dtype)), device=device)
            for a in args_info
        ]
    return cache[key]


def _done(run_secs: list[float] | None, error: str | None) -> Any:
    return _DoneFuture(ms.runner.RunnerResult(run_secs, error))


@derived_object
class InProcessRunner(ms.runner.PyRunner):
    """Time in-memory candidates in this process, reusing argument buffers between candidates.

    ``cores`` is the measuring thread's pool (a CPU target's ``num-cores``), ``compile_cores``
    the threads that compile the rest of a batch (every host core for a GPU target).
    """

    def __init__(
        self,
        shared: Shared,
        device: Any,
        cores: int,
        budget_s: float = BRIEF_BUDGET_S,
        compile_cores: int | None = None,
    ) -> None:
        super().__init__()
        self.shared = shared
        self.device = device
        self.cores = cores
        self.compile_cores = compile_cores or cores
        self.budget_s = budget_s
        self.arg_cache: dict[str, list[Any]] = {}

    def run(self, runner_inputs: list[Any]) -> list[Any]:
        shared = self.shared
        futures = []
        compiled_rest = False
        for item in runner_inputs:
            path = str(item.artifact_path)
            if path.startswith(KNOWN_PREFIX):
                futures.append(_done(shared.known[int(path[len(KNOWN_PREFIX) :])], None))
                continue
            rt_mod = shared.modules.pop(path, None)
            if shared.stop.is_set() or shared.out_of_time():
                futures.append(_done(None, INTERRUPTED))
                continue
            if rt_mod is None:
                futures.append(_done(None, "missing artifact"))
                continue
            task = path.split(":", 2)[-1]
            if isinstance(rt_mod, Pending):
                try:
                    rt_mod = rt_mod.result()
                except Exception as err:  # noqa: BLE001 - reported to the user, not dropped
                    message = str(err) or traceback.format_exc()
                    shared.note_error("build", message)
                    futures.append(_done(None, BUILD_FAILED + message))
                    continue
            try:
                args = _alloc_args(list(item.args_info), self.device, self.arg_cache)
                secs, early = on_measure_thread(
                    self.cores, time_candidate, rt_mod, args, self.device, shared.best.get(task),
                    self.budget_s, shared.cold,
                )  # fmt: skip
            except Exception as err:  # noqa: BLE001 - counted by the callback, not dropped
                futures.append(_done(None, str(err)))
                continue
            shared.early_stopped += int(early)
            mean = sum(secs) / len(secs)
            if mean < shared.best.get(task, float("inf")):
                shared.best[task] = mean
            futures.append(_done(secs, None))
            if shared.tick is not None:
                shared.tick(task)
            if not compiled_rest:
                # The first candidate is measured after one build; the rest of the batch is
                # compiled now, on every core at once, and all of it before the next
                # measurement, so that no compile runs beside a kernel being timed.
                compiled_rest = True
                compile_all(shared.modules, self.compile_cores, shared.deadline)
        return futures
