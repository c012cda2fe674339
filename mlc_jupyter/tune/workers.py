"""Warm, in-process builder and runner for MetaSchedule.

MetaSchedule's ``LocalBuilder``/``LocalRunner`` start fresh worker processes every round (each one
re-imports TVM, and the first build imports ``tvm.s_tir.tensor_intrin`` for ~33 s), export and
link a shared library per candidate, and measure every candidate for 100 ms however slow it is.
Here both live in the kernel's own process for its whole life. The builder only files each
candidate; the runner compiles the first of a round with ``tvm.compile`` (~0.05 s) and times it,
so the first measurement comes after one build, then compiles the rest of the round on every
core at once (``tvm.compile`` releases the GIL) before timing any of them. Candidates are
timed on a kernel-lifetime thread whose TVM pool has the target's ``num-cores`` workers: once
when clearly slower than the best so far, briefly when not, and over 100 ms (as MetaSchedule's
runner times every candidate) when close to the best. The driver re-times the top few at the end.

This module imports TVM at import time; import it lazily.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any

import numpy as np
from tvm.ir.utils import derived_object

from ..tvm_compat import meta_schedule, structural_hash, tvm, use_all_cores

ms = meta_schedule()
_tvm = tvm()

#: Prefix of the in-memory "artifact paths" the builder hands to the runner.
MEMORY_PREFIX = "mlc-memory:"
#: Prefix of the artifact path of a candidate already measured in an earlier run (resume).
KNOWN_PREFIX = "mlc-known:"
#: Prefix of the run error of a candidate that failed to compile (counted as a build error).
BUILD_FAILED = "build failed: "
#: The run error of candidates skipped because the run is stopping (not saved as records).
INTERRUPTED = "interrupted before measurement"


class StopTuning(Exception):  # noqa: N818 - a signal, not an error
    """Raised inside MetaSchedule's loop to end the run (Ctrl-C or a progress callback)."""


class Shared:
    """State shared by the builder, runner and progress callback of one tuning run."""

    def __init__(self) -> None:
        self.modules: dict[str, Any] = {}
        self.known: dict[int, list[float]] = {}
        self.known_hits: set[str] = set()
        self.best: dict[str, float] = {}
        self.stop = threading.Event()
        self.build_errors = 0
        self.run_errors = 0
        self.first_error = ""
        self.early_stopped = 0
        self.counter = itertools.count()
        self.tick: Callable[[str], None] | None = None

    def note_error(self, kind: str, message: str) -> None:
        if kind == "build":
            self.build_errors += 1
        else:
            self.run_errors += 1
        if not self.first_error:
            lines = [line for line in str(message).strip().splitlines() if line.strip()]
            self.first_error = f"{kind}: " + (lines[-1] if lines else "unknown error")


_MEASURERS: dict[int, ThreadPoolExecutor] = {}
_MEASURERS_LOCK = threading.Lock()


def _size_thread_pool(cores: int) -> None:
    """Give the calling thread a TVM thread pool of ``cores`` workers.

    TVM's pool is per thread; its size comes from ``TVM_NUM_THREADS``, which TVM also reads when
    it launches parallel work, so the variable stays set (:func:`~mlc_jupyter.tvm_compat.
    use_all_cores`) and only a different core count reconfigures this thread's pool.
    """
    use_all_cores()
    if os.environ["TVM_NUM_THREADS"] != str(cores):
        _tvm.get_global_func("runtime.config_threadpool")(0, cores)


def on_measure_thread(cores: int, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run ``fn`` on the kernel-lifetime measuring thread whose TVM pool has ``cores`` workers."""
    cores = max(1, int(cores))
    with _MEASURERS_LOCK:
        executor = _MEASURERS.get(cores)
        if executor is None:
            executor = ThreadPoolExecutor(
                1, thread_name_prefix=f"mlc-measure-{cores}", initializer=_size_thread_pool,
                initargs=(cores,),
            )  # fmt: skip
            _MEASURERS[cores] = executor
    return executor.submit(fn, *args, **kwargs).result()


def unpin_this_thread() -> None:
    """Let the calling thread (and the search threads it starts) use every CPU again.

    Running a parallel kernel on a thread makes TVM pin that thread to one core; the search's
    and XGBoost's threads inherit the mask, so after a ``%mlc_time`` in the same kernel the
    whole search would share one core.
    """
    try:
        os.sched_setaffinity(0, range(os.cpu_count() or 1))
    except (AttributeError, OSError, ValueError):
        pass


def target_cores(target: Any) -> int:
    """The ``num-cores`` a CPU target asks for (1 when it does not say)."""
    return int(target.attrs["num-cores"]) if "num-cores" in target.attrs else 1


def _workload_key(mod: Any) -> str:
    """The name of the task a candidate module belongs to (its first PrimFunc's name)."""
    for gv, _ in mod.functions_items():
        return gv.name_hint
    return "main"


def _build_one(mod: Any, target: Any) -> Any:
    from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock

    mod = RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(mod)
    return _tvm.compile(mod, target=target)


@derived_object
class InProcessBuilder(ms.builder.PyBuilder):
    """Compile candidates in this process; keep them in memory (or export them for RPC)."""

    def __init__(self, shared: Shared, export_dir: str | None = None) -> None:
        super().__init__()
        self.shared = shared
        self.export_dir = export_dir

    def build(self, build_inputs: list[Any]) -> list[Any]:
        shared = self.shared
        if shared.stop.is_set():
            raise StopTuning("interrupted")
        results = []
        for item in build_inputs:
            if shared.known:
                digest = int(structural_hash(item.mod))
                if digest in shared.known:
                    key = f"{KNOWN_PREFIX}{digest}"
                    shared.known_hits.add(key)
                    results.append(ms.builder.BuilderResult(key, None))
                    continue
            number = next(shared.counter)
            if self.export_dir is None:
                # Compiled by the runner just before it is timed: the first measurement
                # comes after one build instead of after the whole batch.
                key = f"{MEMORY_PREFIX}{number}:{_workload_key(item.mod)}"
                shared.modules[key] = _Pending(item.mod, item.target)
                results.append(ms.builder.BuilderResult(key, None))
                continue
            try:
                rt_mod = _build_one(item.mod, item.target)
            except Exception as err:  # noqa: BLE001 - reported to the user, not dropped
                shared.note_error("build", str(err) or traceback.format_exc())
                results.append(ms.builder.BuilderResult(None, str(err) or type(err).__name__))
                continue
            path = f"{self.export_dir}/candidate_{number}.so"
            rt_mod.export_library(path)
            results.append(ms.builder.BuilderResult(path, None))
        return results


class _Pending:
    """A candidate the builder accepted and the runner compiles: alone before the first
    measurement of a batch, then together with the rest of the batch (``_compile_all``)."""

    __slots__ = ("mod", "target", "future")

    def __init__(self, mod: Any, target: Any) -> None:
        self.mod = mod
        self.target = target
        self.future: Future | None = None

    def result(self) -> Any:
        """The compiled module (raises what compiling raised)."""
        if self.future is None:
            return _build_one(self.mod, self.target)
        return self.future.result()


_COMPILERS: dict[int, ThreadPoolExecutor] = {}


def _compile_all(modules: dict[str, Any], cores: int) -> None:
    """Compile every pending candidate in ``modules`` on ``cores`` threads and wait for all.

    ``tvm.compile`` releases the GIL: two threads compile twice as many candidates a second.
    """
    pending = [m for m in modules.values() if isinstance(m, _Pending) and m.future is None]
    if not pending:
        return
    with _MEASURERS_LOCK:
        executor = _COMPILERS.get(cores)
        if executor is None:
            executor = ThreadPoolExecutor(max(1, cores), thread_name_prefix="mlc-compile")
            _COMPILERS[cores] = executor
    for item in pending:
        item.future = executor.submit(_build_one, item.mod, item.target)
    wait([item.future for item in pending])


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
    key = repr([(tuple(int(x) for x in a.shape), str(a.dtype)) for a in args_info])
    if key not in cache:
        rng = np.random.default_rng(0)
        arrays = []
        for info in args_info:
            shape = [int(x) for x in info.shape]
            dtype = str(info.dtype)
            if dtype.startswith("float"):
                data = rng.uniform(-1, 1, size=shape).astype(dtype)
            else:
                data = rng.integers(0, 8, size=shape).astype(dtype)
            arrays.append(_tvm.runtime.tensor(data, device=device))
        cache[key] = arrays
    return cache[key]


#: A candidate whose first call takes longer than this is timed by that call alone.
SLOW_CALL_S = 0.5
#: Below this, a plain Python call is too coarse to judge a candidate; ``time_evaluator`` probes.
COARSE_CALL_S = 0.002
#: A candidate within this factor of the best so far is a contender and is timed precisely.
CONTENDER_FACTOR = 1.15
#: A candidate whose first reading is over this factor of the best so far keeps that reading.
#: A single reading overstates the steady time: 1.0-2.2x here at 512^3 (median ~1.2x), so a cut
#: at 1.5x once dropped a search's truly fastest candidate (0.68 ms, read 1.53 ms).
CUT_FACTOR = 3.0


def measure(
    rt_mod: Any,
    args: list[Any],
    device: Any,
    best: float | None,
    budget_s: float = 0.025,
    slower_factor: float = CUT_FACTOR,
    contender_budget_s: float = 0.1,
) -> tuple[list[float], bool]:
    """Time ``rt_mod``'s entry function; cut short when it is clearly slower than ``best``.

    The first call is timed directly (``time_evaluator`` would add an untimed warm-up call, which
    costs seconds for the worst candidates of a large workload). A candidate slower than
    ``slower_factor`` times the best so far, or than ``SLOW_CALL_S``, keeps that one time. A
    contender (within ``CONTENDER_FACTOR`` of the best, or the first of its task) gets 3 repeats
    over ``contender_budget_s``, as MetaSchedule's own runner times every candidate (100 ms),
    because the cost model and the search's parents come from the fastest records, a few percent
    apart, which a 3-call figure cannot tell. The rest get 3 repeats within ``budget_s`` (and
    the contender's timing if those show it is one after all).
    Returns the per-repeat seconds and whether the measurement stopped early.
    """
    name = "main"  # MetaSchedule names every task's function "main"
    rt_mod = getattr(rt_mod, "mod", rt_mod)  # tvm.compile returns an Executable
    func = rt_mod[name]
    start = time.perf_counter()
    func(*args)
    device.sync()
    first = time.perf_counter() - start
    if first < COARSE_CALL_S:
        first = float(rt_mod.time_evaluator(name, device, number=1, repeat=1)(*args).mean)
    if first > SLOW_CALL_S or (best is not None and first > slower_factor * best):
        return [first], True

    def timed(budget: float, estimate: float) -> list[float]:
        number = max(1, min(100_000, int(budget / 3 / max(estimate, 1e-9))))
        timer = rt_mod.time_evaluator(name, device, number=number, repeat=3)
        return [float(x) for x in timer(*args).results]

    if best is None or first < CONTENDER_FACTOR * best:
        return timed(contender_budget_s, first), False
    secs = timed(budget_s, first)
    mean = sum(secs) / len(secs)
    if mean < CONTENDER_FACTOR * best:  # its first call was slow; it is a contender after all
        secs = timed(contender_budget_s, mean)
    return secs, False


@derived_object
class InProcessRunner(ms.runner.PyRunner):
    """Time in-memory candidates in this process, reusing argument buffers between candidates."""

    def __init__(self, shared: Shared, device: Any, cores: int, budget_s: float = 0.025) -> None:
        super().__init__()
        self.shared = shared
        self.device = device
        self.cores = cores
        self.budget_s = budget_s
        self.arg_cache: dict[str, list[Any]] = {}

    def run(self, runner_inputs: list[Any]) -> list[Any]:
        shared = self.shared
        futures = []
        compiled_rest = False
        for item in runner_inputs:
            path = str(item.artifact_path)
            if path.startswith(KNOWN_PREFIX):
                secs = shared.known[int(path[len(KNOWN_PREFIX) :])]
                futures.append(_DoneFuture(ms.runner.RunnerResult(secs, None)))
                continue
            rt_mod = shared.modules.pop(path, None)
            if shared.stop.is_set():
                futures.append(_DoneFuture(ms.runner.RunnerResult(None, INTERRUPTED)))
                continue
            if rt_mod is None:
                futures.append(_DoneFuture(ms.runner.RunnerResult(None, "missing artifact")))
                continue
            task = path.split(":", 2)[-1]
            if isinstance(rt_mod, _Pending):
                try:
                    rt_mod = rt_mod.result()
                except Exception as err:  # noqa: BLE001 - reported to the user, not dropped
                    message = str(err) or traceback.format_exc()
                    shared.note_error("build", message)
                    failed = ms.runner.RunnerResult(None, BUILD_FAILED + message)
                    futures.append(_DoneFuture(failed))
                    continue
            try:
                args = _alloc_args(list(item.args_info), self.device, self.arg_cache)
                secs, early = on_measure_thread(
                    self.cores, measure, rt_mod, args, self.device, shared.best.get(task),
                    self.budget_s,
                )  # fmt: skip
            except Exception as err:  # noqa: BLE001 - counted by the callback, not dropped
                futures.append(_DoneFuture(ms.runner.RunnerResult(None, str(err))))
                continue
            shared.early_stopped += int(early)
            mean = sum(secs) / len(secs)
            if mean < shared.best.get(task, float("inf")):
                shared.best[task] = mean
            futures.append(_DoneFuture(ms.runner.RunnerResult(secs, None)))
            if shared.tick is not None:
                shared.tick(task)
            if not compiled_rest:
                # The first candidate is measured after one build; the rest of the batch is
                # compiled now, on every core at once, and all of it before the next
                # measurement, so that no compile runs beside a kernel being timed.
                compiled_rest = True
                _compile_all(shared.modules, self.cores)
        return futures


def make_rpc_runner(host: str, port: int, key: str) -> Any:
    """MetaSchedule's RPC runner for devices registered with a tracker under ``key``."""
    config = ms.runner.RPCConfig(
        tracker_host=host, tracker_port=port, tracker_key=key, session_timeout_sec=60
    )
    evaluator = ms.runner.EvaluatorConfig(number=3, repeat=1, min_repeat_ms=50)
    return ms.runner.RPCRunner(config, evaluator, max_workers=1)


def light_tensor_intrin(target_kind: str) -> None:
    """Register only the tensor intrinsics a target can use, once per process.

    ``TuneContext`` imports ``tvm.s_tir.tensor_intrin``, which parses every intrinsic of every
    backend (~35 s here, 20 s of it CUDA's). MetaSchedule's default CPU rules use none of the
    GPU ones, so for an ``llvm`` target the package is set up without its ``__init__`` and only
    the CPU modules are imported (~2 s). GPU targets get the full import. A later explicit
    ``import tvm.s_tir.tensor_intrin.cuda`` still works.
    """
    import importlib
    import importlib.util
    import sys

    name = "tvm.s_tir.tensor_intrin"
    if name in sys.modules:
        if target_kind != "llvm":
            for sub in ("cuda", "rocm"):
                importlib.import_module(f"{name}.{sub}")
        return
    if target_kind != "llvm":
        importlib.import_module(name)
        return
    spec = importlib.util.find_spec(name)
    if spec is None:
        return
    package = importlib.util.module_from_spec(spec)
    sys.modules[name] = package
    for sub in ("dot_product_common", "x86", "arm_cpu", "riscv_cpu"):
        importlib.import_module(f"{name}.{sub}")
