"""Tuning one kernel (a PrimFunc or a TensorIR module): MetaSchedule's search with warm
in-process workers and a database that resumes.

The search (space, XGBoost cost model, evolutionary search, gradient task scheduler) is
MetaSchedule's own, after a first round sampled at random (:mod:`.search.strategy`); only the workers (:mod:`.search.candidate_builder`, :mod:`.search.runner`), the record keeping
(:mod:`.search.callback`, :mod:`.records`) and the choice of the result (:mod:`.selection`) are ours.
:func:`tune_kernel` runs in named steps: prepare the run, set up the shared state, search,
report. Whole models are tuned kernel by kernel with it (:mod:`.whole_model`); users call
:func:`mlc_jupyter.tune.tune`, which picks between the two.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from time import perf_counter
from typing import Any

from ..compilation import device_for, is_cpu, is_cuda, is_gpu_target
from ..compilation.bounds import check_bounds
from ..compilation.intrinsics import load_tensor_intrinsics
from ..errors import TuneError, error_reason
from ..measure import estimate_flops
from ..measure.gpu_limits import device_limits
from ..measure.machine import cached_machine_limits, checked_against
from ..measure.timer import argument_bytes, argument_dtypes
from ..tvm_compat import (
    METASCHEDULE_LOGGER,
    cuda_compiler,
    fork_seed,
    metaschedule,
    metaschedule_outside_notebook,
    metaschedule_task_loggers,
    tune_context,
    var_dtype,
)
from .budget import Budget, Deadline
from .options import SearchOptions, tuning_target, work_dir_for
from .records import Measured, create_database, measured_before
from .report import TuneResult
from .rpc import RPCServers, RPCSpec, make_rpc_runner, rpc_for
from .search.callback import RecordAndReport
from .search.candidate_builder import InProcessBuilder
from .search.run_state import Shared
from .search.runner import InProcessRunner
from .search.strategy import RandomFirstRound
from .search.threads import host_cores, target_cores, unpin_this_thread
from .selection import Best, best_schedules
from .spaces.choice import Spaces, choose_spaces
from .tasks import (
    Tasks,
    assemble_tir,
    bind_scalars,
    collect_tasks,
    scalar_params,
    with_scalars_kept,
)
from .timing import baseline_timing, clearly_faster, compare_in_turns, final_timing, time_remote
from .work_lock import hold_work_dir, waiting_progress

LOG_NAME = "tune.log"
#: The most candidates a round measures (MetaSchedule's own default).
MAX_PER_ITER = 64
#: The fewest candidates a round measures.
MIN_PER_ITER = 8
#: A small budget is spread over at least this many rounds, so the cost model learns before
#: most of it is spent.
MIN_ROUNDS = 4
#: MetaSchedule's trial limit for a run limited by time only (the budget stops it first).
UNLIMITED_TRIALS = 1_000_000


@dataclass
class _Run:
    """Everything a tuning run decided before it searches."""

    tasks: Tasks
    target: Any
    work: Path
    database: Any
    log_path: Path
    rpc: RPCSpec | None
    budget: Budget
    measured: Measured
    spaces: Spaces
    peak_gflops: float | None = None
    notes: tuple[str, ...] = ()  # what the run fixed (scalar parameters bound to values)
    rpc_servers: RPCServers | None = None  # what the search saw of the RPC servers
    cold: bool = False  # the top records re-timed with the weights flushed (SearchOptions.cold)

    @property
    def remaining(self) -> int:
        if self.budget.trials is None:
            return UNLIMITED_TRIALS
        return max(0, self.budget.trials - self.measured.count)


def default_per_iter(remaining: int, gpu: bool = False) -> int:
    """Candidates per round: MetaSchedule's 64 for large budgets, fewer for small ones on a CPU.

    Smaller rounds for large budgets were slower and found worse kernels (docs/DEVELOPING.md,
    "Tuning rounds"); small CPU budgets get at least ``MIN_ROUNDS`` rounds. A GPU round always
    takes 64: its search costs the same host time whatever the round's size and far more than
    compiling and timing its candidates, so smaller rounds multiply the search per candidate.
    """
    if gpu:
        return max(1, min(MAX_PER_ITER, remaining))
    return min(MAX_PER_ITER, max(MIN_PER_ITER, remaining // MIN_ROUNDS))


def tune_kernel(
    mod: Any,
    target: Any,
    budget: Budget,
    search: SearchOptions,
    *,
    work_dir: str | Path | None = None,
    fresh: bool = False,
    baseline: bool = True,
    bind: dict[str, Any] | None = None,
    deadline: Deadline | None = None,
) -> TuneResult:
    """Tune the TensorIR kernels of ``mod`` within ``budget``, searching as ``search`` says.

    The arguments are :func:`mlc_jupyter.tune.tune`'s, which documents them; ``baseline=False``
    skips timing the untuned workload (a whole model times its kernels itself). ``deadline`` is
    the run's clock (a whole model's slot for this kernel); without one the budget's time starts
    with the search.
    """
    notes: tuple[str, ...] = ()
    original = mod
    if bind:
        mod, notes = bind_scalars(mod, bind)
    with contextlib.ExitStack() as held:
        run = _prepare(mod, target, budget, work_dir, fresh, search, held)
        run.notes = notes
        return _tune_run(run, original, bind, search, baseline, deadline)


def _tune_run(
    run: _Run, original: Any, bind: dict[str, Any] | None, search: SearchOptions,
    baseline: bool, deadline: Deadline | None,
) -> TuneResult:  # fmt: skip
    """Search, re-time and report, the work dir's lock held by the caller."""
    unpin_this_thread()
    load_tensor_intrinsics(run.target, run.spaces.tensor_intrinsics)
    shared = _shared_state(run.measured)
    shared.cold = run.cold
    shared.deadline = deadline or run.budget.start()
    if is_cuda(run.target) and run.rpc is None:
        shared.compiler = cuda_compiler()
    per_iter = search.per_iter or default_per_iter(run.remaining, is_gpu_target(run.target))
    callback = RecordAndReport(
        shared, run.database, run.budget, shared.deadline, run.measured.count, search.on_progress,
        str(run.log_path), str(run.work), run.measured.curves, run.peak_gflops, per_iter,
        {n: estimate_flops(m, "main") for n, m in zip(run.tasks.names, run.tasks.mods, strict=True)},
    )  # fmt: skip
    stop_reason = "trials"
    start = perf_counter()
    if run.remaining > 0:
        stop_reason = _search(run, shared, callback, per_iter, search.seed)
    if stop_reason == "trials" and run.remaining > 0 and _short_of_budget(run, callback.done):
        stop_reason = "searched"
    result = _result(run, callback, shared, stop_reason, perf_counter() - start, baseline)
    peak = checked_peak_gflops(
        result.peak_gflops, result.best_gflops, run.target, "the tuned kernel"
    )
    result = dataclasses.replace(result, peak_gflops=peak)
    return _scalars_kept(result, original, bind) if bind else result


def _short_of_budget(run: _Run, records: int) -> bool:
    """Whether MetaSchedule ended the search with trials or time still to spend: its search
    strategy found no candidate it had not measured (a small space, searched through)."""
    return run.budget.trials is None or records < run.budget.trials


def checked_peak_gflops(
    peak: float | None, gflops: float | None, target: Any, what: str
) -> float | None:
    """``peak``, measured again when ``what`` ran above it at ``gflops`` (no code beats the peak,
    so it read low); a GPU's peak comes back as it is."""
    if not peak or not gflops or not is_cpu(target):
        return peak
    cores = target_cores(target)
    limits = checked_against(cached_machine_limits(), gflops, cores, what)
    return (limits.peak(cores) if limits is not None else None) or peak


def _scalars_kept(result: TuneResult, original: Any, bind: dict[str, Any]) -> TuneResult:
    """The result with its kernel taking its float scalars again when the schedule allows, or
    when it is the kernel as written (:func:`.tasks.with_scalars_kept`); its latencies stay those
    of the values tuned for."""
    as_written = result.kept == "as written"
    if result.trace is None and not as_written:
        return result
    kept = with_scalars_kept(original, None if as_written else result.trace, bind)
    if kept is None:
        return result
    general, note = kept
    return dataclasses.replace(result, mod=general, notes=(note,))


def _prepare(
    mod: Any, target: Any, budget: Budget, work_dir: Any, fresh: bool, search: SearchOptions,
    held: contextlib.ExitStack,
) -> _Run:  # fmt: skip
    """Check the request, split ``mod`` into tasks, pick their spaces, take the work dir's lock
    (held until ``held`` closes: the run's life) and open the database."""
    space = search.space
    rpc_spec = rpc_for(search.rpc, target)
    target = tuning_target(target, rpc_spec)
    tasks = collect_tasks(mod, target)
    check_bounds(tasks.workload)  # candidates are compiled and run in this process
    _refuse_scalar_parameters(tasks)
    spaces = choose_spaces(tasks.mods, target, space)
    work = (
        Path(work_dir) if work_dir else work_dir_for(tasks.workload, target, tasks.kind, spaces.key)
    )
    held.enter_context(
        hold_work_dir(work, wait=search.wait, on_wait=waiting_progress(search.on_progress, work))
    )
    database = create_database(work, fresh)
    measured = measured_before(database, tasks)
    log_path = work / "logs" / LOG_NAME
    peak = None if rpc_spec else _peak_gflops(target, tasks)
    return _Run(
        tasks, target, work, database, log_path, rpc_spec, budget, measured, spaces, peak,
        cold=search.cold and rpc_spec is None,
    )  # fmt: skip


def _refuse_scalar_parameters(tasks: Tasks) -> None:
    """A ``TuneError`` for a kernel with a scalar parameter no value was bound to: MetaSchedule
    measures candidates on arguments it makes from buffer shapes, and fails deep in its runner on
    a scalar."""
    for name, task in zip(tasks.names, tasks.mods, strict=True):
        scalars = scalar_params(task["main"])
        if scalars:
            listed = ", ".join(f"{p.name}: {var_dtype(p)}" for p in scalars)
            where = f"{name}: " if len(tasks.names) > 1 else ""
            flags = " ".join(f"--bind {p.name}=VALUE" for p in scalars)
            entries = ", ".join(f"{p.name!r}: VALUE" for p in scalars)
            raise TuneError(
                f"{where}cannot tune a kernel with a scalar parameter ({listed}) without its "
                "value: MetaSchedule measures each candidate on arguments it makes from buffer "
                "shapes",
                hint=f"give the value to tune for: %mlc_tune ... {flags}, or "
                f"tune(..., bind={{{entries}}})",
            )


def _peak_gflops(target: Any, tasks: Tasks) -> float | None:
    """This machine's fp32 peak for the target's cores (measured once per machine, cached);
    ``None`` for GPU targets and kernels on other data than fp32."""
    limits = device_limits(target, [d for mod in tasks.mods for d in argument_dtypes(mod)])
    return limits.peak(target_cores(target)) if limits else None


def _shared_state(measured: Measured) -> Shared:
    """The state the workers and the callback share, seeded with what was measured before."""
    shared = Shared()
    shared.known = measured.known
    for name, points in measured.curves.items():
        shared.best[name] = points[-1][1]
    return shared


def _search(run: _Run, shared: Shared, callback: Any, per_iter: int, seed: int | None) -> str:
    """MetaSchedule's search over the missing trials; returns why it ended (see ``TuneResult``)."""
    ms = metaschedule()
    export_dir = tempfile.mkdtemp(prefix="mlc-tune-") if run.rpc else None
    builder = InProcessBuilder(shared, export_dir, host_cores(run.target))
    if run.rpc:
        runner, run.rpc_servers = make_rpc_runner(run.rpc)
    else:
        runner = InProcessRunner(
            shared, device_for(run.target), target_cores(run.target),
            compile_cores=host_cores(run.target),
        )  # fmt: skip
    contexts = _task_contexts(run.tasks, run.target, run.work, run.spaces, seed)
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
                    cost_model=ms.cost_model.XGBModel(num_tuning_cores=host_cores(run.target)),
                    measure_callbacks=[callback, ms.measure_callback.UpdateCostModel()],
                    task_scheduler="gradient",
                )
        except KeyboardInterrupt:
            return "interrupted"
        except Exception as err:  # noqa: BLE001 - StopTuning arrives wrapped by the FFI
            stopped = shared.stop.is_set() or shared.stop_reason
            if not stopped and "StopTuning" not in f"{type(err)} {err}":
                raise TuneError(f"tuning failed: {error_reason(err)}") from None
            return "interrupted" if shared.stop.is_set() else shared.stop_reason or "interrupted"
        finally:
            shared.modules.clear()
            if run.rpc_servers is not None:
                run.rpc_servers.refresh()  # servers lost in the last round count too
            if export_dir:
                shutil.rmtree(export_dir, ignore_errors=True)
    return "trials"


def _task_contexts(
    tasks: Tasks, target: Any, work_dir: Path, spaces: Spaces, seed: int | None
) -> list[Any]:
    """One MetaSchedule ``TuneContext`` per task, logging to the work dir."""
    metaschedule()  # imported before its logger is set up
    global_logger = logging.getLogger(METASCHEDULE_LOGGER)
    global_logger.setLevel(logging.WARNING)  # the console handler it makes gets WARNING
    loggers = metaschedule_task_loggers(str(work_dir), tasks.names)
    contexts = []
    for name, mod, logger, rand, space in zip(
        tasks.names, tasks.mods, loggers, fork_seed(seed, len(tasks.names)), spaces.generators,
        strict=False,
    ):  # fmt: skip
        contexts.append(
            tune_context(
                mod=mod,
                target=target,
                space_generator=space,
                search_strategy=RandomFirstRound(),
                task_name=name,
                logger=logger,
                rand_state=rand,
                num_threads=host_cores(target),
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


def _tuned_tir(
    run: _Run, best: Best, with_baseline: bool = True
) -> tuple[Any, float | None, float | None, Any, Any, Any]:
    """The tuned TensorIR module, the untuned and tuned latencies, the tuned one's ``Timing``,
    the trace shown and the untuned one's ``Timing`` (its spread says whether the speed-up is
    measurable).

    The tuned latency is measured afresh, as ``%mlc_time`` measures (on the RPC server with
    ``--rpc``), once the choice is made: the figure that chose the winner is the best of several
    noisy ones and reads low.
    """
    tasks = run.tasks
    tuned = assemble_tir(tasks, best.mods)
    name = "main" if len(tasks.mods) == 1 else tasks.names[0]
    trace = best.traces.get(tasks.names[0])
    if run.rpc:
        baseline, latency = time_remote(run.rpc, [tasks.workload, tuned], run.target, name)
        if latency is None and len(tasks.mods) == 1:
            latency = best.measured_s.get(tasks.names[0])
        return tuned, baseline, latency, None, trace, None
    # None for what cannot be timed: a GPU workload without thread bindings builds as host code
    baseline = baseline_timing(tasks.workload, run.target, name) if with_baseline else None
    timing = final_timing(tuned, run.target, name)
    return tuned, _median(baseline), _median(timing), timing, trace, baseline


def _median(timing: Any) -> float | None:
    return timing.median_s if timing is not None else None


def _result(
    run: _Run,
    callback: Any,
    shared: Shared,
    stop_reason: str,
    elapsed: float,
    with_baseline: bool = True,
) -> TuneResult:
    """Pick the best schedules, time them against the untuned workload, build the result."""
    tasks = run.tasks
    best = best_schedules(run.database, tasks, run.target, retime=run.rpc is None, cold=run.cold)
    if not best.mods:
        raise TuneError(
            "no candidate ran successfully, so there is nothing to return"
            + (f" (first error: {shared.first_error})" if shared.first_error else ""),
            hint=f"the MetaSchedule log is in {run.log_path}",
        )
    tuned, baseline, latency, timing, trace, baseline_t = _tuned_tir(run, best, with_baseline)
    kept, candidate_s = "tuned", None
    written = _written_if_faster(run, tuned, baseline, latency)
    if written is not None:
        kept, candidate_s, timing, baseline_t = "as written", latency, written, written
        tuned, baseline, latency = tasks.mods[0], written.median_s, written.median_s
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
        trials_requested=run.budget.trials or 0,
        trials_new=callback.new_done,
        resumed_from=run.measured.count,
        interrupted=stop_reason == "interrupted",
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
        rpc_devices=run.rpc_servers.most_at_once if run.rpc_servers else 0,
        rpc_lost=run.rpc_servers.lost if run.rpc_servers else 0,
        stop_reason=stop_reason,
        spaces=dict(zip(tasks.names, run.spaces.names, strict=False)),
        timing=timing,
        baseline_timing=baseline_t,
        peak_gflops=run.peak_gflops,
        bytes=argument_bytes(tasks.mods[0])
        if tasks.kind == "tir" and len(tasks.mods) == 1
        else None,
        time_budget_s=shared.deadline.seconds,
        compiler=shared.compiler,
        notes=run.notes,
        kept=kept,
        best_candidate_s=candidate_s,
    )


#: The kernel as written is timed in turns against the tuned one when its first timing is less
#: than this many times the tuned one's.
_WRITTEN_RECHECK_WITHIN = 4.0


def _written_if_faster(run: _Run, tuned: Any, baseline: float | None, latency: float | None) -> Any:
    """The ``Timing`` of the kernel as written when it beats every candidate, else ``None``.

    As ``torch.compile``'s autotuning keeps ATen's kernel when no candidate beats it: a small
    kernel can lose to every candidate of a space whose schedules are all parallel. The two are
    timed in turns before the kernel as written is kept; a tie keeps the tuned one. Their first
    timings, taken one after the other, only rule out a kernel as written that is several times
    slower: on a shared machine a load spike in one of them moves it by more than their spread.
    """
    tasks = run.tasks
    if tasks.kind != "tir" or len(tasks.mods) != 1 or run.rpc is not None:
        return None
    if baseline is None or latency is None or baseline >= latency * _WRITTEN_RECHECK_WITHIN:
        return None
    written_s, tuned_s = compare_in_turns(tasks.mods[0], tuned, run.target)
    if not clearly_faster(written_s, tuned_s):
        return None
    return final_timing(tasks.mods[0], run.target)
