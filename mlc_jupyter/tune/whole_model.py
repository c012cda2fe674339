"""Tuning a whole Relax model: one task per kernel, the budget spent where the latency is.

MetaSchedule's own Relax flow starts every task with a full round of candidates before its task
scheduler looks at latencies, so a ResNet-18 (twenty-odd kernels) spends its first thousand
trials on warming up. Here:

1. The model is prepared as a build prepares it (:mod:`~mlc_jupyter.compilation.default_schedule`:
   legalised, fused, each kernel given a default schedule), except that each 3x3 layer that can
   be computed directly or with a Winograd tile is timed each way, alone and in the model, and
   computed the fastest way (:mod:`.winograd_layers`; not with ``func``); those kernels are the
   tasks, and so are the PrimFuncs the module brings itself (called with ``R.call_tir`` or
   ``R.call_dps_packed``), unless their shapes are symbolic. ``func`` picks one (the book's §4.6).
2. A per-kernel profile of that model gives each task its share of the model's latency;
   a kernel under :data:`~.model_plan.MIN_SHARE` keeps its default schedule. Kernels of the same
   structure (structurally equal workloads) are one task: tuned once, the result used by each
   (:mod:`.model_plan` makes this plan). Tasks that share an anchor operator with another
   epilogue (ResNet's convolutions followed by ``relu``, ``add`` or both) are one family
   (:mod:`.variants`): the largest is searched with the family's share of the budget, its best
   decisions are replayed on the others, and each keeps the replay only where it is clearly
   faster than its own default schedule.
3. Tasks are tuned one after the other (:mod:`.model_tasks`), the largest share first, each by
   :func:`.kernel.tune_kernel` in the kernel's own work dir: the one ``%mlc_tune`` of that kernel
   alone uses (under ``work_dir/kernels`` when the user gives a work dir). Its database is
   shared by every model with that kernel and by a restart, so known records are counted as
   reused and not measured again. A task's default schedule is committed to the database first,
   so the search starts from it. Ctrl-C stops after the batch in flight and keeps what is tuned.
4. A trial budget is split by share (at least :data:`~.budget.MIN_TASK_TRIALS` a task). A time
   budget covers the whole run: the profile, every task and the end (building the tuned model
   and timing it); each task's slot is its share of what is left after the time the end needs,
   at least a minimum slot sized at the pace measured so far, and tasks that no minimum slot fits
   keep their default schedule (:class:`~.budget.TimeLedger`). A task's rounds are small enough
   that the first fits half its slot.
5. When the tasks leave some of the budget (their searches ran through their spaces, or
   trials are left), each layer the whole model was timed with two ways
   (:attr:`.winograd_layers.LayerChoice.way_not_taken`) is tuned the way not taken: its new
   kernels are the tasks of a second pass, the others take the first pass's schedules, and the
   faster of the two tuned models, timed in turns, goes on (a way is chosen on default
   schedules, and the two ways tune differently).
6. A tuned kernel replaces the default one only when it is clearly faster, both timed in turns
   (:func:`.timing.clearly_faster`); the tuned model is then timed against the default build
   (the build's own model, not the plan's) in turns (:func:`.timing.final_model_timing`): again
   when it times slower than its kernels' own timings say, and the default build is kept, with
   a note, when the tuned one is measurably slower: a result is never a model slower than the
   build it replaces.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from time import perf_counter
from typing import Any

from ..compilation import build_module, is_cpu
from ..errors import MLCError, TuneError
from ..measure import time_functions
from ..results import ImportedModel
from ..tvm_compat import IS_SCHEDULED_ATTR
from .budget import MIN_TASK_TRIALS, Budget, TimeLedger
from .database_files import set_aside
from .model_plan import (
    MIN_SHARE,
    SHARES_FILE,
    group_tasks,
    plan_model,
    plan_other_ways,
    save_final_s,
    with_origin,
)
from .model_tasks import TasksOutcome, TaskStart, kernel_dir, tune_groups
from .options import SearchOptions, tuning_target, work_dir_for
from .records import KERNEL_DIRS_FILE, write_kernel_dirs
from .report import ModelTask, TuneResult
from .timing import ModelTimings, final_model_timing
from .variants import join_variants
from .winograd_layers import way_name, ways_not_taken
from .work_lock import hold_work_dir, waiting_progress

#: Where a work dir's kernels keep their databases under a work dir the user gave.
KERNELS_DIR = "kernels"


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
    by latency share; its time covers the whole run, the profile and the final timing included.
    ``on_task(index, total, task)`` hears when each task starts (``total``: the tasks this
    budget reaches, :func:`.model_tasks.planned_tasks`); ``search.on_progress`` gets each task's progress
    events. Returns a :class:`TuneResult` whose ``mod`` is the tuned model
    and whose ``model_tasks`` say, per kernel, its share, records, time and latency before and
    after.
    """
    mod = getattr(model, "mod", model)
    target = tuning_target(target)
    # its kernels read their weights from memory in the model: chosen cold (timing.py)
    search = dataclasses.replace(search, cold=is_cpu(target) and search.rpc is None)
    work = Path(work_dir) if work_dir else work_dir_for(mod, target, "model", str(func or ""))
    with hold_work_dir(work, wait=search.wait, on_wait=waiting_progress(search.on_progress, work)):
        return _tune_model(
            model, mod, target, budget, search, func, work, bool(work_dir), fresh, on_task
        )


def _tune_model(
    model: Any, mod: Any, target: Any, budget: Budget, search: SearchOptions, func: str | None,
    work: Path, given: bool, fresh: bool, on_task: TaskStart | None,
) -> TuneResult:  # fmt: skip
    """:func:`tune_model`, its work dir's lock held (``given``: the user named the work dir)."""
    deadline = budget.start()
    start = perf_counter()
    origin = model if isinstance(model, ImportedModel) else getattr(model, "origin", None)
    if fresh:
        set_aside(work, "previous", (KERNEL_DIRS_FILE, SHARES_FILE))
    plan = plan_model(mod, target, func, origin, work)
    if not plan.tasks:
        reasons = "; ".join(plan.skipped) or "it has no kernels"
        raise TuneError(f"nothing in this model can be tuned: {reasons}")
    tuned_tasks = [t for t in plan.tasks if t.share >= MIN_SHARE or func or not plan.profiled]
    groups = join_variants(group_tasks(tuned_tasks)) if func is None else group_tasks(tuned_tasks)
    kernels_root = work / KERNELS_DIR if given else None
    dirs = {
        t.name: kernel_dir(t.workload, target, search.space, kernels_root, search.cold)
        for t in tuned_tasks
    }
    if fresh:  # each kernel's database moved aside under its own lock
        for path in set(dirs.values()):
            with hold_work_dir(
                path, wait=search.wait, on_wait=waiting_progress(search.on_progress, path)
            ):
                set_aside(path, "previous")
    write_kernel_dirs(work, {name: str(path) for name, path in dirs.items()})
    ledger = TimeLedger(deadline, plan.final_s)
    planned = perf_counter()
    out = tune_groups(groups, dirs, target, budget, search, ledger, on_task)
    out.rows += [
        ModelTask(t.name, t.calls, t.share, 0, None, None, "default")
        for t in plan.tasks
        if t not in tuned_tasks
    ]
    tuned_mod = _assemble(plan.prepared, out.chosen)
    if func is None and not out.interrupted and _left_over(budget, ledger, out, plan.final_s):
        tuned_mod = _tune_other_ways(
            mod, plan, tuned_mod, out, origin,
            _Run(target, budget, search, ledger, kernels_root, work, dirs, on_task, len(groups)),
        )  # fmt: skip
    tuned = perf_counter()
    verdict = final_model_timing(
        lambda: _time_models(plan.default_build, tuned_mod, origin, target, search.rpc),
        _kernels_gain_s(out.rows),
        lambda seconds: not deadline.limited or deadline.left_s() >= seconds,
    )
    if verdict.keep_default:  # never a tuned model slower than the build it replaces
        tuned_mod = plan.default_build
        out.rows = [dataclasses.replace(r, kept="default") for r in out.rows]
    shown = verdict.default if verdict.keep_default else verdict.tuned
    end = perf_counter()
    save_final_s(work, end - tuned)
    return TuneResult(
        workload=mod,
        mod=tuned_mod,
        trace=next((t for t in out.traces if t is not None), None),  # of the largest kernel tuned
        best_latency_s=shown.median_s if shown is not None else None,
        baseline_latency_s=verdict.default.median_s if verdict.default is not None else None,
        target=target,
        work_dir=str(work),
        n_records=out.records,
        trials_requested=budget.trials or 0,
        trials_new=out.new,
        resumed_from=out.records - out.new,
        interrupted=out.interrupted,
        kind="model",
        elapsed_s=end - start,
        task_workloads=out.workloads,
        rpc=search.rpc,
        rpc_devices=out.rpc_devices,
        rpc_lost=out.rpc_lost,
        stop_reason="interrupted" if out.interrupted else out.stop_reason,
        timing=shown,
        baseline_timing=verdict.default,
        peak_gflops=verdict.peak_gflops,
        kept="default build" if verdict.keep_default else "tuned",
        time_budget_s=budget.time_s,
        model_tasks=tuple(sorted(out.rows, key=lambda r: -r.share)),
        notes=tuple(plan.skipped) + tuple(plan.notes) + tuple(out.notes) + verdict.notes,
        origin=origin,
        task_work_dirs=out.dirs,
        phases={"plan": planned - start, "tasks": tuned - planned, "final": end - tuned},
    )


@dataclass(frozen=True)
class _Run:
    """What a model's tuning runs its tasks with, for a pass after the first."""

    target: Any
    budget: Budget
    search: SearchOptions
    ledger: TimeLedger
    kernels_root: Path | None
    work: Path
    dirs: dict[str, Path]
    on_task: TaskStart | None
    tasks_before: int


def _left_over(budget: Budget, ledger: TimeLedger, out: TasksOutcome, compare_s: float) -> bool:
    """Whether the tasks left some of the budget: time for a task and one more timing of two
    models (``compare_s``), or trials for a task."""
    if ledger.deadline.limited:
        return ledger.left_s() >= compare_s + ledger.min_slot_s()
    return budget.trials is not None and budget.trials - out.new >= MIN_TASK_TRIALS


def _tune_other_ways(
    mod: Any, plan: Any, planned: Any, out: TasksOutcome, origin: Any, run: _Run
) -> Any:
    """With the budget the tasks left, tune the way not taken of each layer the whole model was
    timed with two ways (:func:`.model_plan.plan_other_ways`), then time the two tuned models in turns
    and keep the faster: a layer's way was chosen on default schedules, and the two ways tune
    differently. The other model's kernels that the plan has too take their tuned schedules.
    Returns the model kept (``planned`` or the other); ``out`` takes the other's rows when it is
    kept, and the trials spent either way."""
    other = plan_other_ways(mod, run.target, plan, origin)
    if other is None:
        return planned
    tasks = [t for t in other.tasks if t.name not in other.same and t.share >= MIN_SHARE]
    if not tasks:
        return planned
    search = run.search
    dirs = {
        t.name: kernel_dir(t.workload, run.target, search.space, run.kernels_root, search.cold)
        for t in tasks
    }
    write_kernel_dirs(run.work, {n: str(p) for n, p in {**run.dirs, **dirs}.items()})
    budget = run.budget
    if budget.trials is not None:
        budget = dataclasses.replace(budget, trials=max(0, budget.trials - out.new))
    run.ledger.final_s += plan.final_s  # the two tuned models are timed once more
    try:
        extra = tune_groups(
            join_variants(group_tasks(tasks)), dirs, run.target, budget, search, run.ledger,
            _counted_on(run.on_task, run.tasks_before),
        )  # fmt: skip
    finally:
        run.ledger.final_s -= plan.final_s
    out.new += extra.new
    out.records += extra.records
    out.interrupted = extra.interrupted
    out.notes += extra.notes
    taken = {a: out.chosen[o] for a, o in other.same.items() if o in out.chosen}
    other_mod = _assemble(other.prepared, {**taken, **extra.chosen})
    both = _time_models(planned, other_mod, origin, run.target, search.rpc)
    planned_t, other_t = both.default, both.tuned
    tiles = {c.key: c.tile for c in plan.layers}
    ways = "; ".join(
        f"{key}: {way_name(tiles[key])} or {way_name(way)}"
        for key, way in ways_not_taken(plan.layers).items()
    )
    if planned_t is None or other_t is None:
        out.notes.append(f"{ways}: kept as planned, the model could not be timed the other way")
        return planned
    keep_other = other_t.median_s < planned_t.median_s
    out.notes.append(
        f"{ways}, both tuned: {'now the second' if keep_other else 'kept the first'} (the whole "
        f"tuned model, in turns: {planned_t.median_s * 1e3:.3f} ms the first way, "
        f"{other_t.median_s * 1e3:.3f} ms the second)"
    )
    if not keep_other:
        return planned
    _take_other(other, out, extra)
    return other_mod


def _counted_on(on_task: TaskStart | None, before: int) -> TaskStart | None:
    """``on_task`` for a later pass: its tasks counted after the ``before`` of the first."""
    if on_task is None:
        return None
    return lambda index, total, row: on_task(before + index, before + total, row)


def _take_other(other: Any, out: TasksOutcome, extra: TasksOutcome) -> None:
    """``out``'s rows, workloads and work dirs, named as the kernels of ``other`` are."""
    same = other.same
    back = {o: a for a, o in same.items()}
    rows = {r.name: r for r in out.rows}
    kept: list[ModelTask] = []
    new_rows = {r.name: r for r in extra.rows}
    for task in other.tasks:
        if task.name in new_rows:
            kept.append(new_rows[task.name])
        elif task.name in same and same[task.name] in rows:
            row = rows[same[task.name]]
            kept.append(
                dataclasses.replace(
                    row, name=task.name, calls=task.calls, share=task.share,
                    shared_with=_renamed(row.shared_with, back),
                    replayed_on=_renamed(row.replayed_on, back),
                    replayed_from=back.get(row.replayed_from, row.replayed_from),
                )
            )  # fmt: skip
        else:
            kept.append(ModelTask(task.name, task.calls, task.share, 0, None, None, "default"))
    out.rows = kept
    for table, new in ((out.workloads, extra.workloads), (out.dirs, extra.dirs)):
        moved = {a: table[o] for a, o in same.items() if o in table}
        table.clear()
        table.update({**moved, **new})


def _renamed(names: tuple[str, ...], back: dict[str, str]) -> tuple[str, ...]:
    return tuple(back.get(n, n) for n in names)


def _assemble(prepared: Any, chosen: dict[str, Any]) -> Any:
    """The model as built, each chosen tuned kernel in place of its default one."""
    out = prepared.clone()
    for name, func in chosen.items():
        kernel = func.with_attr("global_symbol", name).with_attr(IS_SCHEDULED_ATTR, True)
        out.update_func(out.get_global_var(name), kernel)
    return out


def _time_models(default: Any, tuned: Any, origin: Any, target: Any, rpc: Any) -> ModelTimings:
    """The default and the tuned model timed in turns, as ``%mlc_time`` races them, with the
    fp32 peak where it bounds the default build."""
    variants = {
        "default": _variant(default, origin, target),
        "tuned": _variant(tuned, origin, target),
    }
    try:
        report = time_functions(variants, target, baselines=False, rpc=rpc)
    except MLCError:
        return ModelTimings(None, None)
    return ModelTimings(report["default"], report["tuned"], report.bounding_peak(report["default"]))


def _kernels_gain_s(rows: list[ModelTask]) -> float:
    """Seconds a model call gains by its tuned kernels, as their timings in turns say."""
    return sum(
        r.calls * (r.before_s - r.after_s)
        for r in rows
        if r.kept == "tuned" and r.before_s and r.after_s and r.calls
    )


def _variant(mod: Any, origin: Any, target: Any) -> Any:
    built = build_module(mod, target)
    return with_origin(built, origin) if origin is not None else built


__all__ = ["tune_model"]
