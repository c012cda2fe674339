"""Tuning a whole Relax model: one task per kernel, the budget spent where the latency is.

MetaSchedule's own Relax flow starts every task with a full round of candidates before its task
scheduler looks at latencies, so a ResNet-18 (twenty-odd kernels) spends its first thousand
trials on warming up. Here:

1. The model is prepared as a build prepares it (:mod:`~mlc_jupyter.compilation.default_schedule`:
   legalised, fused, each kernel given a default schedule); those kernels are the tasks, and so
   are the PrimFuncs the module brings itself (called with ``R.call_tir`` or
   ``R.call_dps_packed``), unless their shapes are symbolic. ``func`` picks one (the book's §4.6).
2. A per-kernel profile of the default build gives each task its share of the model's latency;
   the budget (trials or time) is split in proportion, and a kernel under :data:`MIN_SHARE` keeps
   its default schedule.
3. Tasks are tuned one after the other, the largest share first, each by
   :func:`.kernel.tune_kernel` in one work dir (one database: running the same tune again resumes every task). A task's default
   schedule is committed to the database first, so the search starts from it, not from scratch.
   Ctrl-C stops after the batch in flight and keeps whatever is tuned.
4. A tuned kernel replaces the default one only when it is faster (by :data:`KEEP_MARGIN`), both
   timed in turns; the tuned model is then timed against the default build in turns.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter
from typing import Any

from ..compilation import build_module
from ..compilation.default_schedule import Prepared, has_operators, prepare_model
from ..errors import MLCError, TuneError
from ..measure import profile_kernels, time_functions
from ..results import ImportedModel
from ..tvm_compat import (
    IS_SCHEDULED_ATTR,
    metaschedule,
    prim_func_type,
    remove_weight_layout_rewrite,
    tvm,
)
from .budget import Budget, budget_for
from .kernel import tune_kernel
from .options import SearchOptions, tuning_target, work_dir_for
from .records import create_database
from .report import ModelTask, TuneResult
from .tasks import collect_tasks
from .timing import KernelSamplers, in_turns

#: A kernel with a smaller share of the model's latency keeps its default schedule.
MIN_SHARE = 0.01
#: The fewest trials a tuned task gets (about two rounds of the search).
MIN_TASK_TRIALS = 16
#: The least time a tuned task gets, in seconds.
MIN_TASK_TIME_S = 20.0
#: A tuned kernel replaces the default one only when it is faster by more than this share (a
#: tie within the noise of the timing keeps the schedule the build already has).
KEEP_MARGIN = 0.02
#: Where a work dir keeps each kernel's calls, seconds and share of the model's latency.
SHARES_FILE = "model_shares.json"
#: Rounds of the before/after timing of each kernel.
COMPARE_ROUNDS = 5

TaskStart = Callable[[int, int, "ModelTask"], None]


@dataclass
class _Task:
    name: str
    func: Any  # the kernel to tune (unscheduled)
    default: Any  # the kernel a build uses (default schedule, or the hand-written one)
    trace: Any = None  # the default schedule's trace, when it has one
    calls: int = 0
    seconds: float = 0.0  # per model call, from the profile
    share: float = 0.0


@dataclass
class _Plan:
    prepared: Any
    tasks: list[_Task] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # kernels that cannot be tuned, and why
    profiled: bool = True


def tune_model(
    model: Any,
    target: Any,
    budget: Budget,
    search: SearchOptions,
    *,
    func: str | None = None,
    work_dir: str | Path | None = None,
    fresh: bool = False,
    on_task: TaskStart | None = None,
) -> TuneResult:
    """Tune every kernel of a Relax model (or ``func`` only) within one budget.

    ``model`` is a Relax IRModule or an imported model. ``budget`` is the whole model's, split
    by latency share. ``on_task(index, total, task)`` hears when each task starts (``total``:
    the kernels this budget reaches, :func:`planned_tasks`);
    ``search.on_progress`` gets each task's progress events. Returns a :class:`TuneResult` whose
    ``mod`` is the tuned model and whose ``model_tasks`` say, per kernel, its share, trials and
    latency before and after.
    """
    origin = model if isinstance(model, ImportedModel) else getattr(model, "origin", None)
    mod = getattr(model, "mod", model)
    target = tuning_target(target)
    work = Path(work_dir) if work_dir else work_dir_for(mod, target, "model", str(func or ""))
    if fresh and work.exists():
        shutil.rmtree(work)
    plan = _plan(mod, target, func, origin, work)
    if not plan.tasks:
        reasons = "; ".join(plan.skipped) or "it has no kernels"
        raise TuneError(f"nothing in this model can be tuned: {reasons}")
    tuned_tasks = [t for t in plan.tasks if t.share >= MIN_SHARE or func or not plan.profiled]
    shares = _shares(tuned_tasks)
    planned = planned_tasks(budget, [shares[t.name] for t in tuned_tasks])
    start = perf_counter()
    rows: list[ModelTask] = []
    chosen: dict[str, Any] = {}
    workloads: dict[str, Any] = {}
    traces: list[Any] = []
    stop_reason, new, records, interrupted = "trials", 0, 0, False
    trials_left = budget.trials
    for index, task in enumerate(tuned_tasks):
        left = sum(shares[t.name] for t in tuned_tasks[index:])
        task_trials, task_time = _task_budget(budget, shares[task.name], left, start)
        if task_trials is not None and trials_left is not None:
            task_trials = min(task_trials, trials_left)
        row = ModelTask(task.name, task.calls, task.share, 0, None, None, "default")
        spent = task_trials == 0 or (task_time is not None and task_time <= 0)
        if interrupted or spent:
            rows.append(row)  # the budget is spent: this kernel keeps its default schedule
            continue
        if on_task is not None:
            on_task(index, planned, row)
        result = _tune_task(task, target, task_trials, task_time, work, search)
        new += result.trials_new
        records += result.n_records
        if trials_left is not None:
            trials_left = max(0, trials_left - (task_trials or 0))
        workloads.update(result.task_workloads)
        traces.append(result.trace)
        interrupted = result.interrupted
        stop_reason = result.stop_reason if result.stop_reason != "trials" else stop_reason
        before, after = _compare(task, result.mod, target) if search.rpc is None else (None, None)
        keep = after is not None and before is not None and after < before * (1 - KEEP_MARGIN)
        if keep or (search.rpc is not None and result.mod is not None):
            chosen[task.name] = result.mod["main"]
        rows.append(
            ModelTask(
                task.name, task.calls, task.share, result.n_records, before, after,
                "tuned" if task.name in chosen else "default",
            )
        )  # fmt: skip
    rows += [
        ModelTask(t.name, t.calls, t.share, 0, None, None, "default")
        for t in plan.tasks
        if t not in tuned_tasks
    ]
    tuned_mod = _assemble(plan.prepared, chosen)
    baseline, latency, timing = _time_models(plan.prepared, tuned_mod, origin, target, search.rpc)
    return TuneResult(
        workload=mod,
        mod=tuned_mod,
        trace=next((t for t in traces if t is not None), None),  # of the largest kernel tuned
        best_latency_s=latency,
        baseline_latency_s=baseline,
        target=target,
        work_dir=str(work),
        n_records=records,
        trials_requested=budget.trials or 0,
        trials_new=new,
        interrupted=interrupted,
        kind="model",
        elapsed_s=perf_counter() - start,
        task_workloads=workloads,
        rpc=search.rpc,
        stop_reason="interrupted" if interrupted else stop_reason,
        timing=timing,
        time_budget_s=budget.time_s,
        model_tasks=tuple(sorted(rows, key=lambda r: -r.share)),
        notes=tuple(plan.skipped),
        origin=origin,
    )


def _plan(mod: Any, target: Any, func: str | None, origin: Any, work: Path) -> _Plan:
    """The model as built, its tasks and their shares of the model's latency.

    The shares are measured once per work dir and kept there (:data:`SHARES_FILE`): a run that
    resumes splits its budget as the first run did, so it measures only what is missing.
    """
    prepared = prepare_model(mod, target) if has_operators(mod) else Prepared(mod, fused=mod)
    plan = _Plan(prepared.mod)
    made = set(prepared.scheduled) | set(prepared.unscheduled)
    for gv, kernel in prepared.mod.functions_items():
        name = gv.name_hint
        if not isinstance(kernel, prim_func_type()) or (func is not None and name != func):
            continue
        source = prepared.fused[name] if name in made else kernel
        if not _static(source):
            plan.skipped.append(f"{name} has symbolic shapes (MetaSchedule tunes fixed shapes)")
            continue
        plan.tasks.append(_Task(name, source, kernel, prepared.traces.get(name)))
    if func is not None and not any(t.name == func for t in plan.tasks) and not plan.skipped:
        names = sorted(
            gv.name_hint
            for gv, f in prepared.mod.functions_items()
            if isinstance(f, prim_func_type())
        )
        raise TuneError(
            f"no kernel {func!r} in this model", hint=f"its kernels: {', '.join(names) or 'none'}"
        )
    saved = _saved_shares(work)
    if saved and {t.name for t in plan.tasks} <= set(saved):
        for task in plan.tasks:
            task.calls, task.seconds, task.share = saved[task.name]
        plan.tasks.sort(key=lambda t: -t.share)
        return plan
    _profile(plan, target, origin)
    if plan.profiled:
        work.mkdir(parents=True, exist_ok=True)
        rows = {t.name: [t.calls, t.seconds, t.share] for t in plan.tasks}
        (work / SHARES_FILE).write_text(json.dumps(rows, indent=1))
    return plan


def _saved_shares(work: Path) -> dict[str, tuple[int, float, float]]:
    try:
        rows = json.loads((work / SHARES_FILE).read_text())
        return {name: (int(c), float(s), float(f)) for name, (c, s, f) in rows.items()}
    except (OSError, ValueError, TypeError):
        return {}


def _static(func: Any) -> bool:
    try:
        return all(int(d) >= 0 for p in func.params for d in p.shape)
    except (TypeError, ValueError, AttributeError):
        return False


def _profile(plan: _Plan, target: Any, origin: Any) -> None:
    """Each task's calls, seconds and share of the model's latency (equal shares when the model
    cannot run here, e.g. with inputs whose shapes are symbolic)."""
    try:
        built = build_module(plan.prepared, target)
        if origin is not None:
            built = _with_origin(built, origin)
        profile = profile_kernels(built, runs=3)
    except MLCError:
        plan.profiled = False
        for task in plan.tasks:
            task.share = 1.0 / len(plan.tasks)
        return
    whole = profile.kernel_s + profile.overhead_s
    by_name = {k.name: k for k in profile.kernels}
    for task in plan.tasks:
        kernel = by_name.get(task.name)
        if kernel is not None:
            task.calls, task.seconds = kernel.calls, kernel.seconds
            task.share = kernel.seconds / whole if whole else 0.0
    plan.tasks.sort(key=lambda t: -t.share)


def _with_origin(built: Any, origin: Any) -> Any:
    return dataclasses.replace(built, origin=origin)


def _shares(tasks: list[_Task]) -> dict[str, float]:
    """Each task's part of the budget: its share of the latency of the tasks tuned."""
    total = sum(t.share for t in tasks)
    if total <= 0:
        return {t.name: 1.0 / len(tasks) for t in tasks}
    return {t.name: t.share / total for t in tasks}


def planned_tasks(budget: Any, shares: list[float]) -> int:
    """How many of the tasks (largest share first) a budget of trials reaches: each takes its
    share, at least :data:`MIN_TASK_TRIALS`, until the trials are spent. A time budget gives
    every task a slot (:data:`MIN_TASK_TIME_S` at least), so all of them."""
    if budget.trials is None:
        return len(shares)
    left, count = budget.trials, 0
    for share in shares:
        if left <= 0:
            break
        left -= max(MIN_TASK_TRIALS, round(budget.trials * share))
        count += 1
    return count


def _task_budget(
    budget: Any, share: float, share_left: float, start: float
) -> tuple[int | None, float | None]:
    """The trials and seconds of one task: its share of the model's budget, at least a minimum.

    A task's time is its part of the time left among the tasks not tuned yet (``share_left`` is
    their shares' sum), so time a task leaves over (it converged) goes to the ones after it.
    """
    trials = None if budget.trials is None else max(MIN_TASK_TRIALS, round(budget.trials * share))
    seconds = None
    if budget.time_s is not None:
        left = budget.time_s - (perf_counter() - start)
        part = share / share_left if share_left > 0 else 1.0
        seconds = max(MIN_TASK_TIME_S, left * part) if left > 0 else 0.0
    return trials, seconds


def _tune_task(
    task: _Task, target: Any, trials: int | None, seconds: float | None, work: Path,
    search: SearchOptions,
) -> TuneResult:  # fmt: skip
    workload = tvm().IRModule({task.name: task.func})
    if task.trace is not None:  # the seed counts among the task's earlier trials
        _seed_with_default(workload, task, target, work)
    return tune_kernel(
        workload, target, budget_for(trials, seconds), search, work_dir=work, baseline=False
    )


def _seed_with_default(workload: Any, task: _Task, target: Any, work: Path) -> bool:
    """Commit the default schedule to the database as a measured record (once per task), so the
    evolutionary search starts from it; ``True`` when it did now."""
    ms = metaschedule()
    task_mod = collect_tasks(workload, target).mods[0]
    database = create_database(work)
    if database.has_workload(task_mod) and database.get_top_k(
        database.commit_workload(task_mod), 1
    ):
        return False
    samplers = KernelSamplers(target)
    try:
        seconds = in_turns([samplers.add(_kernel_module(task.default))], 1)[0]
    except MLCError:
        return False
    database.commit_tuning_record(
        ms.database.TuningRecord(
            trace=task.trace,
            workload=database.commit_workload(task_mod),
            run_secs=[seconds],
            target=target,
            args_info=ms.arg_info.ArgInfo.from_prim_func(task_mod["main"]),
        )
    )
    return True


def _kernel_module(func: Any) -> Any:
    """A kernel as the model runs it: the weight packing it carries runs at build time, so it is
    left out of the kernel's time (as MetaSchedule's builder leaves it out of a candidate's)."""
    return remove_weight_layout_rewrite(
        tvm().IRModule({"main": func.with_attr("global_symbol", "main")})
    )


def _compare(task: _Task, tuned: Any, target: Any) -> tuple[float | None, float | None]:
    """The default and the tuned kernel's seconds per call, timed in turns on shared buffers."""
    if tuned is None:
        return None, None
    samplers = KernelSamplers(target)
    try:
        both = [
            samplers.add(_kernel_module(task.default)),
            samplers.add(_kernel_module(tuned["main"])),
        ]
    except MLCError:
        return None, None
    before, after = in_turns(both, COMPARE_ROUNDS)
    return before, after


def _assemble(prepared: Any, chosen: dict[str, Any]) -> Any:
    """The model as built, each chosen tuned kernel in place of its default one."""
    out = prepared.clone()
    for name, func in chosen.items():
        kernel = func.with_attr("global_symbol", name).with_attr(IS_SCHEDULED_ATTR, True)
        out.update_func(out.get_global_var(name), kernel)
    return out


def _time_models(
    default: Any, tuned: Any, origin: Any, target: Any, rpc: Any
) -> tuple[float | None, float | None, Any]:
    """The default and the tuned model's latencies, timed in turns (``None`` when the model
    cannot run here)."""
    variants = {
        "default": _variant(default, origin, target),
        "tuned": _variant(tuned, origin, target),
    }
    try:
        report = time_functions(variants, target, baselines=False, rpc=rpc)
    except MLCError:
        return None, None, None
    return report["default"].median_s, report["tuned"].median_s, report["tuned"]


def _variant(mod: Any, origin: Any, target: Any) -> Any:
    built = build_module(mod, target)
    return _with_origin(built, origin) if origin is not None else built


__all__ = ["tune_model"]
