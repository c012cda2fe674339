"""The tuning run: MetaSchedule's search with warm in-process workers and a database that resumes.

The search (space, XGBoost cost model, evolutionary search, gradient task scheduler) is
MetaSchedule's own; only the workers (:mod:`.builder`, :mod:`.runner`), the record keeping
(:mod:`.callback`, :mod:`.records`) and the choice of the result (:mod:`.selection`) are ours.
:func:`tune` runs in named steps: prepare the run, set up the shared state, search, report.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..compilation import device_for, is_gpu_target
from ..compilation.bounds import check_bounds
from ..errors import BuildError, TuneError, error_reason
from ..measure import estimate_flops
from ..results import TuneProgress, TuneResult
from ..tvm_compat import (
    METASCHEDULE_LOGGER,
    fork_seed,
    metaschedule,
    metaschedule_outside_notebook,
    metaschedule_task_loggers,
)
from .builder import InProcessBuilder
from .callback import RecordAndReport
from .intrinsics import load_tensor_intrinsics
from .options import tuning_target, work_dir_for
from .records import Measured, create_database, measured_before
from .rpc import RPCSpec, make_rpc_runner, parse_rpc
from .run_state import Shared
from .runner import InProcessRunner
from .selection import Best, best_schedules
from .tasks import Tasks, apply_relax, assemble_tir, collect_tasks
from .threads import target_cores, unpin_this_thread
from .timing import time_relax, time_remote, time_tir

LOG_NAME = "tune.log"
#: The most candidates a round measures (MetaSchedule's own default).
MAX_PER_ITER = 64
#: The fewest candidates a round measures.
MIN_PER_ITER = 8
#: A small budget is spread over at least this many rounds, so the cost model learns before
#: most of it is spent.
MIN_ROUNDS = 4


@dataclass
class _Run:
    """Everything a tuning run decided before it searches."""

    tasks: Tasks
    target: Any
    work: Path
    database: Any
    log_path: Path
    rpc: RPCSpec | None
    trials: int
    measured: Measured

    @property
    def remaining(self) -> int:
        return max(0, self.trials - self.measured.count)


def default_per_iter(remaining: int) -> int:
    """Candidates per round: MetaSchedule's 64 for large budgets, fewer for small ones.

    Smaller rounds for large budgets were slower and found worse kernels (docs/DEVELOPING.md,
    "Tuning rounds"); small budgets get at least ``MIN_ROUNDS`` rounds.
    """
    return min(MAX_PER_ITER, max(MIN_PER_ITER, remaining // MIN_ROUNDS))


def tune(
    mod: Any,
    target: Any = None,
    *,
    trials: int = 64,
    per_iter: int | None = None,
    work_dir: str | Path | None = None,
    fresh: bool = False,
    seed: int | None = None,
    space: Any = "default",
    rpc: str | None = None,
    on_progress: Callable[[TuneProgress], None] | None = None,
) -> TuneResult:
    """Tune ``mod`` with MetaSchedule for ``trials`` measured candidates in all.

    The work dir's JSON database is the truth: a second call with the same workload and work dir
    measures only the trials still missing (``fresh=True`` starts over). Ctrl-C, or a
    ``KeyboardInterrupt`` raised by ``on_progress``, ends the run after the batch in flight,
    keeps every record and returns the best so far (``interrupted=True``).
    """
    run = _prepare(mod, target, trials, work_dir, fresh, space, rpc)
    unpin_this_thread()
    load_tensor_intrinsics(str(run.target.kind.name))
    shared = _shared_state(run.measured)
    callback = RecordAndReport(
        shared, run.database, trials, run.measured.count, on_progress, str(run.log_path),
        str(run.work), run.measured.curves,
    )  # fmt: skip
    interrupted = False
    start = time.perf_counter()
    if run.remaining > 0:
        per_iter = per_iter or default_per_iter(run.remaining)
        interrupted = _search(run, shared, callback, per_iter, space, seed)
    return _result(run, callback, shared, interrupted, time.perf_counter() - start)


def _prepare(
    mod: Any, target: Any, trials: int, work_dir: Any, fresh: bool, space: Any, rpc: str | None
) -> _Run:
    """Check the request, split ``mod`` into tasks, open the work dir's database."""
    if trials < 1:
        raise TuneError(f"--trials must be at least 1, got {trials}")
    rpc_spec = parse_rpc(rpc)
    target = tuning_target(target, rpc_spec)
    tasks = collect_tasks(mod, target)
    check_bounds(tasks.workload)  # candidates are compiled and run in this process
    work = Path(work_dir) if work_dir else work_dir_for(tasks.workload, target, tasks.kind, space)
    database = create_database(work, fresh)
    measured = measured_before(database, tasks)
    return _Run(tasks, target, work, database, work / "logs" / LOG_NAME, rpc_spec, trials, measured)


def _shared_state(measured: Measured) -> Shared:
    """The state the workers and the callback share, seeded with what was measured before."""
    shared = Shared()
    shared.known = measured.known
    for name, points in measured.curves.items():
        shared.best[name] = points[-1][1]
    return shared


def _search(
    run: _Run, shared: Shared, callback: Any, per_iter: int, space: Any, seed: int | None
) -> bool:
    """MetaSchedule's search over the missing trials; True when it was interrupted."""
    ms = metaschedule()
    export_dir = tempfile.mkdtemp(prefix="mlc-tune-") if run.rpc else None
    builder = InProcessBuilder(shared, export_dir)
    if run.rpc:
        runner = make_rpc_runner(run.rpc)
    else:
        runner = InProcessRunner(shared, device_for(run.target), target_cores(run.target))
    contexts = _task_contexts(run.tasks, run.target, run.work, space, seed)
    with _logs_to_file(run.log_path):
        try:
            with _sigint_sets(shared.stop):
                ms.tune.tune_tasks(
                    tasks=contexts,
                    task_weights=run.tasks.weights,
                    work_dir=str(run.work),
                    max_trials_global=run.remaining,
                    max_trials_per_task=run.remaining,
                    num_trials_per_iter=per_iter,
                    builder=builder,
                    runner=runner,
                    database=run.database,
                    cost_model=ms.cost_model.XGBModel(num_tuning_cores=target_cores(run.target)),
                    measure_callbacks=[callback, ms.measure_callback.UpdateCostModel()],
                    task_scheduler="gradient",
                )
        except KeyboardInterrupt:
            return True
        except Exception as err:  # noqa: BLE001 - StopTuning arrives wrapped by the FFI
            if not shared.stop.is_set() and "StopTuning" not in f"{type(err)} {err}":
                raise TuneError(f"tuning failed: {error_reason(err)}") from None
            return True
        finally:
            shared.modules.clear()
            if export_dir:
                shutil.rmtree(export_dir, ignore_errors=True)
    return False


def _task_contexts(
    tasks: Tasks, target: Any, work_dir: Path, space: Any, seed: int | None
) -> list[Any]:
    """One MetaSchedule ``TuneContext`` per task, logging to the work dir."""
    ms = metaschedule()
    global_logger = logging.getLogger(METASCHEDULE_LOGGER)
    global_logger.setLevel(logging.WARNING)  # the console handler it makes gets WARNING
    for handler in list(global_logger.handlers):  # it re-lists these by name; keep it clean
        global_logger.removeHandler(handler)
        handler.close()
    loggers = metaschedule_task_loggers(str(work_dir), tasks.names)
    if space in (None, "default"):
        space = "post-order-apply"
    elif callable(space) and not isinstance(space, ms.space_generator.SpaceGenerator):
        space = ms.space_generator.ScheduleFn(space)
    contexts = []
    for name, mod, logger, rand in zip(
        tasks.names, tasks.mods, loggers, fork_seed(seed, len(tasks.names)), strict=False
    ):
        contexts.append(
            ms.TuneContext(
                mod=mod,
                target=target,
                space_generator=space,
                search_strategy="evolutionary",
                task_name=name,
                logger=logger,
                rand_state=rand,
                num_threads=target_cores(target),
            ).clone()
        )
    return contexts


@contextlib.contextmanager
def _logs_to_file(log_path: Path) -> Iterator[None]:
    """Send MetaSchedule's console logging to ``log_path`` instead of the cell."""
    logger = logging.getLogger(METASCHEDULE_LOGGER)
    saved = list(logger.handlers)
    for handler in saved:
        if type(handler) is logging.StreamHandler:
            logger.removeHandler(handler)
    file_handler = logging.FileHandler(log_path, mode="a")
    file_handler.set_name("mlc_jupyter.tune.file")
    file_handler.setFormatter(logging.Formatter("%(asctime)s [%(levelname)s] %(message)s"))
    logger.addHandler(file_handler)
    try:
        with metaschedule_outside_notebook():
            yield
    finally:
        logger.removeHandler(file_handler)
        file_handler.close()


@contextlib.contextmanager
def _sigint_sets(stop: threading.Event) -> Iterator[None]:
    """While tuning, the first Ctrl-C asks the run to stop after the batch; the second aborts."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _tuned_tir(run: _Run, best: Best) -> tuple[Any, float | None, float | None, Any]:
    """The tuned TensorIR module, the untuned and tuned latencies, and the trace shown."""
    tasks = run.tasks
    tuned = assemble_tir(tasks, best.mods)
    name = "main" if len(tasks.mods) == 1 else tasks.names[0]
    if run.rpc:
        baseline, latency = time_remote(run.rpc, [tasks.workload, tuned], run.target, name)
        if latency is None and len(tasks.mods) == 1:
            latency = best.measured_s.get(tasks.names[0])
        return tuned, baseline, latency, best.traces.get(tasks.names[0])
    baseline = _untuned_latency(run, name)
    if len(tasks.mods) == 1 and tasks.names[0] in best.retimed_s:
        latency = best.retimed_s[tasks.names[0]]
    else:
        latency = time_tir(tuned, run.target, name)
    return tuned, baseline, latency, best.traces.get(tasks.names[0])


def _untuned_latency(run: _Run, name: str) -> float | None:
    """The untuned workload's latency; ``None`` for a GPU workload without thread bindings
    (TVM would build it as host code, so it has no GPU time to compare with)."""
    try:
        return time_tir(run.tasks.workload, run.target, name)
    except BuildError:
        if is_gpu_target(run.target):
            return None
        raise


def _tuned_relax(run: _Run, best: Best, shared: Shared) -> tuple[Any, Any, Any, Any]:
    """The tuned Relax module, its latencies, and the trace of its slowest kernel."""
    tuned = apply_relax(run.tasks, run.database, run.target)
    if run.rpc:
        baseline, latency = time_remote(run.rpc, [run.tasks.workload, tuned], run.target)
    else:
        baseline = time_relax(run.tasks.workload, run.target)
        latency = time_relax(tuned, run.target)
    slowest = max(best.traces, key=lambda n: shared.best.get(n, 0.0))
    return tuned, baseline, latency, best.traces[slowest]


def _result(
    run: _Run, callback: Any, shared: Shared, interrupted: bool, elapsed: float
) -> TuneResult:
    """Pick the best schedules, time them against the untuned workload, build the result."""
    tasks = run.tasks
    best = best_schedules(run.database, tasks, run.target, retime=run.rpc is None)
    if not best.mods:
        raise TuneError(
            "no candidate ran successfully, so there is nothing to return"
            + (f" (first error: {shared.first_error})" if shared.first_error else ""),
            hint=f"the MetaSchedule log is in {run.log_path}",
        )
    if tasks.kind == "tir":
        tuned, baseline, latency, trace = _tuned_tir(run, best)
    else:
        tuned, baseline, latency, trace = _tuned_relax(run, best, shared)
    flop = None
    if tasks.kind == "tir" and len(tasks.mods) == 1:
        flop = estimate_flops(tasks.mods[0], "main")
    return TuneResult(
        workload=tasks.workload,
        mod=tuned,
        trace=trace,
        best_latency_s=latency,
        baseline_latency_s=baseline,
        target=run.target,
        work_dir=str(run.work),
        n_records=run.measured.count + callback.new_done,
        trials_requested=run.trials,
        trials_new=callback.new_done,
        resumed_from=run.measured.count,
        interrupted=interrupted,
        kind=tasks.kind,
        flop=flop,
        build_errors=shared.build_errors,
        run_errors=shared.run_errors,
        first_error=shared.first_error,
        elapsed_s=elapsed,
        log_path=str(run.log_path),
        curves={k: tuple(v) for k, v in callback.curves.items()},
        task_workloads=dict(zip(tasks.names, tasks.mods, strict=False)),
        rpc=str(run.rpc) if run.rpc else None,
    )
