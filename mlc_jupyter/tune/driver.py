"""The tuning run: MetaSchedule's search with warm in-process workers and a database that resumes.

The search (space, XGBoost cost model, evolutionary search, gradient task scheduler) is
MetaSchedule's own; only the workers, the record keeping and the reporting are replaced.
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
from pathlib import Path
from typing import Any

from ..errors import TuneError
from ..results import TuneProgress, TuneResult
from ..tvm_compat import (
    Schedule,
    meta_schedule,
    meta_schedule_outside_notebook,
    structural_hash,
    tvm,
)
from .options import parse_rpc, tuning_target, work_dir_for
from .tasks import Tasks, apply_relax, assemble_tir, collect_tasks
from .timing import KernelSamplers, in_turns, time_relax, time_tir

LOG_NAME = "tune.log"
_MS_LOGGER = "tvm.s_tir.meta_schedule"


@contextlib.contextmanager
def _logs_to_file(log_path: Path) -> Iterator[None]:
    """Send MetaSchedule's console logging to ``log_path`` instead of the cell."""
    logger = logging.getLogger(_MS_LOGGER)
    saved = list(logger.handlers)
    for handler in saved:
        if type(handler) is logging.StreamHandler:
            logger.removeHandler(handler)
    file_handler = logging.FileHandler(log_path, mode="a")
    file_handler.set_name("mlc_jupyter.tune.file")
    file_handler.setFormatter(logging.Formatter("%(asctime)s [%(levelname)s] %(message)s"))
    logger.addHandler(file_handler)
    try:
        with meta_schedule_outside_notebook():
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


def _open_database(work_dir: Path, fresh: bool) -> Any:
    ms = meta_schedule()
    if fresh and work_dir.exists():
        shutil.rmtree(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    (work_dir / "logs").mkdir(exist_ok=True)
    return ms.database.JSONDatabase(
        path_workload=str(work_dir / "database_workload.json"),
        path_tuning_record=str(work_dir / "database_tuning_record.json"),
        module_equality="structural",
    )


def _existing(database: Any, tasks: Tasks) -> tuple[int, dict[int, list[float]], dict]:
    """Records already measured for these tasks: count, scheduled-module hash -> secs, curves."""
    _tvm = tvm()
    task_hashes = {
        int(structural_hash(m)): name for name, m in zip(tasks.names, tasks.mods, strict=False)
    }
    count = 0
    known: dict[int, list[float]] = {}
    curves: dict[str, list[tuple[int, float]]] = {}
    best: dict[str, float] = {}
    for record in database.get_all_tuning_records():
        name = task_hashes.get(int(structural_hash(record.workload.mod)))
        if name is None:
            continue
        count += 1
        if record.run_secs is None or not len(record.run_secs):
            continue
        secs = [float(x) for x in record.run_secs]
        try:
            sch = Schedule(record.workload.mod)
            record.trace.apply_to_schedule(sch, remove_postproc=False)
            known[int(structural_hash(sch.mod))] = secs
        except Exception:  # noqa: BLE001,S112 - a stale record is simply not reused
            continue
        mean = sum(secs) / len(secs)
        if mean < best.get(name, float("inf")):
            best[name] = mean
            curves.setdefault(name, []).append((count, mean))
    return count, known, curves


#: How many of a task's fastest records are re-timed at the end to pick the one returned.
RETIME_TOP_K = 5
#: Rounds of the final re-timing: one sample of each of the top records per round.
RETIME_ROUNDS = 7


def _best_schedules(
    database: Any, tasks: Tasks, target: Any
) -> tuple[dict[str, Any], dict[str, Any], dict[str, float]]:
    """Each task's best scheduled module, trace and (for TensorIR) its re-timed latency.

    During the search a candidate is timed briefly, so the top few are close to each other and
    the first place can be noise. For TensorIR tasks the ``RETIME_TOP_K`` fastest records are
    timed again in turns (:func:`~.timing.in_turns`) on shared argument buffers
    (:class:`~.timing.KernelSamplers`) and the one with the lowest median wins.
    """
    mods, traces, secs = {}, {}, {}
    k = RETIME_TOP_K if tasks.kind == "tir" else 1
    for name, mod in zip(tasks.names, tasks.mods, strict=False):
        if not database.has_workload(mod):
            continue
        contenders = []
        samplers = KernelSamplers(target)
        for record in database.get_top_k(database.commit_workload(mod), k):
            sch = Schedule(mod)
            record.trace.apply_to_schedule(sch, remove_postproc=False)
            if k == 1:
                contenders.append((sch.mod, record.trace, None))
                break
            try:
                contenders.append((sch.mod, record.trace, samplers.add(sch.mod)))
            except Exception:  # noqa: BLE001,S112 - a record that no longer builds is skipped
                continue
        if not contenders:
            continue
        if k == 1:
            mods[name], traces[name] = contenders[0][0], contenders[0][1]
            continue
        medians = in_turns([sampler for _, _, sampler in contenders], RETIME_ROUNDS)
        best = min(range(len(contenders)), key=medians.__getitem__)
        mods[name], traces[name], secs[name] = *contenders[best][:2], medians[best]
    return mods, traces, secs


def _task_contexts(tasks: Tasks, target: Any, work_dir: Path, space: Any, seed: int | None):
    ms = meta_schedule()
    from tvm.s_tir.meta_schedule.logging import get_loggers_from_work_dir
    from tvm.s_tir.meta_schedule.utils import fork_seed

    global_logger = logging.getLogger(_MS_LOGGER)
    global_logger.setLevel(logging.WARNING)  # the console handler it makes gets WARNING
    for handler in list(global_logger.handlers):  # it re-lists these by name; keep it clean
        global_logger.removeHandler(handler)
        handler.close()
    loggers = get_loggers_from_work_dir(str(work_dir), tasks.names)
    if space in (None, "default"):
        space = "post-order-apply"
    elif callable(space) and not isinstance(space, ms.space_generator.SpaceGenerator):
        space = ms.space_generator.ScheduleFn(space)
    cores = int(target.attrs.get("num-cores", 1)) if "num-cores" in target.attrs else 1
    contexts = []
    for name, mod, logger, rand in zip(
        tasks.names, tasks.mods, loggers, fork_seed(seed, n=len(tasks.names)), strict=False
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
                num_threads=max(1, cores),
            ).clone()
        )
    return contexts


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
    _tvm = tvm()
    ms = meta_schedule()
    if trials < 1:
        raise TuneError(f"--trials must be at least 1, got {trials}")
    rpc_spec = parse_rpc(rpc)
    target = tuning_target(target)
    tasks = collect_tasks(mod, target)
    work = Path(work_dir) if work_dir else work_dir_for(tasks.workload, target, tasks.kind, space)
    database = _open_database(work, fresh)
    log_path = work / "logs" / LOG_NAME
    done_before, known, curves = _existing(database, tasks)
    remaining = max(0, trials - done_before)
    # MetaSchedule's 64 candidates a round for large budgets (rounds of 32 at 1024^3 and 256
    # trials were slower and found worse kernels here: 73-97 against 107-128 trials/min,
    # 281-299 against 359-371 GFLOP/s); at least 4 rounds for small ones, so the cost model
    # learns before most of the budget is spent.
    per_iter = per_iter or min(64, max(8, remaining // 4))

    from .callback import RecordAndReport
    from .workers import (
        InProcessBuilder,
        InProcessRunner,
        Shared,
        light_tensor_intrin,
        make_rpc_runner,
        target_cores,
        unpin_this_thread,
    )

    unpin_this_thread()

    light_tensor_intrin(str(target.kind.name))
    shared = Shared()
    shared.known = known
    for name, points in curves.items():
        shared.best[name] = points[-1][1]
    callback = RecordAndReport(
        shared, database, trials, done_before, on_progress, str(log_path), str(work), curves
    )
    interrupted = False
    start = time.perf_counter()
    if remaining > 0:
        export_dir = tempfile.mkdtemp(prefix="mlc-tune-") if rpc_spec else None
        builder = InProcessBuilder(shared, export_dir)
        if rpc_spec:
            runner = make_rpc_runner(rpc_spec.host, rpc_spec.port, rpc_spec.key)
        else:
            runner = InProcessRunner(shared, _tvm.cpu(0), target_cores(target))
        contexts = _task_contexts(tasks, target, work, space, seed)
        with _logs_to_file(log_path):
            cores = int(target.attrs["num-cores"]) if "num-cores" in target.attrs else 1
            try:
                with _sigint_sets(shared.stop):
                    ms.tune.tune_tasks(
                        tasks=contexts,
                        task_weights=tasks.weights,
                        work_dir=str(work),
                        max_trials_global=remaining,
                        max_trials_per_task=remaining,
                        num_trials_per_iter=per_iter,
                        builder=builder,
                        runner=runner,
                        database=database,
                        cost_model=ms.cost_model.XGBModel(num_tuning_cores=cores),
                        measure_callbacks=[callback, ms.measure_callback.UpdateCostModel()],
                        task_scheduler="gradient",
                    )
            except KeyboardInterrupt:
                interrupted = True
            except Exception as err:  # noqa: BLE001 - StopTuning arrives wrapped by the FFI
                if not shared.stop.is_set() and "StopTuning" not in f"{type(err)} {err}":
                    raise TuneError(f"tuning failed: {err}".splitlines()[0]) from None
                interrupted = True
            finally:
                shared.modules.clear()
                if export_dir:
                    shutil.rmtree(export_dir, ignore_errors=True)
    return _finish(
        tasks, database, target, work, trials, done_before, callback, shared, interrupted,
        time.perf_counter() - start, str(log_path), rpc_spec,
    )  # fmt: skip


def _finish(
    tasks: Tasks,
    database: Any,
    target: Any,
    work: Path,
    trials: int,
    done_before: int,
    callback: Any,
    shared: Any,
    interrupted: bool,
    elapsed: float,
    log_path: str,
    rpc_spec: Any,
) -> TuneResult:
    best_mods, traces, retimed = _best_schedules(database, tasks, target)
    if not best_mods:
        raise TuneError(
            "no candidate ran successfully, so there is nothing to return"
            + (f" (first error: {shared.first_error})" if shared.first_error else ""),
            hint=f"the MetaSchedule log is in {log_path}",
        )
    n_records = done_before + callback.new_done
    if tasks.kind == "tir":
        tuned = assemble_tir(tasks, best_mods)
        name = "main" if len(tasks.mods) == 1 else tasks.names[0]
        baseline = time_tir(tasks.workload, target, name)
        single = len(tasks.mods) == 1 and tasks.names[0] in retimed
        best = retimed[tasks.names[0]] if single else time_tir(tuned, target, name)
        trace = traces.get(tasks.names[0])
    else:
        tuned = apply_relax(tasks, database, target)
        baseline = time_relax(tasks.workload, target)
        best = time_relax(tuned, target)
        slowest = max(traces, key=lambda n: shared.best.get(n, 0.0))
        trace = traces[slowest]
    flop = None
    if tasks.kind == "tir" and len(tasks.mods) == 1:
        from ..tvm_compat import s_tir

        flop = float(s_tir().analysis.estimate_tir_flops(tasks.mods[0]))
    return TuneResult(
        workload=tasks.workload,
        mod=tuned,
        trace=trace,
        best_latency_s=best,
        baseline_latency_s=baseline,
        target=target,
        work_dir=str(work),
        n_records=n_records,
        trials_requested=trials,
        trials_new=callback.new_done,
        resumed_from=done_before,
        interrupted=interrupted,
        kind=tasks.kind,
        flop=flop,
        build_errors=shared.build_errors,
        run_errors=shared.run_errors,
        first_error=shared.first_error,
        elapsed_s=elapsed,
        log_path=log_path,
        curves={k: tuple(v) for k, v in callback.curves.items()},
        task_workloads=dict(zip(tasks.names, tasks.mods, strict=False)),
        rpc=str(rpc_spec) if rpc_spec else None,
    )
