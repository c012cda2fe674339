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
3. Tasks are tuned one after the other, the largest share first, each by
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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter
from typing import Any

from ..compilation import build_module, is_cpu
from ..errors import MLCError, TuneError
from ..measure import time_functions
from ..results import ImportedModel
from ..tvm_compat import (
    IS_SCHEDULED_ATTR,
    tvm,
)
from .budget import MIN_TASK_TRIALS, Budget, Deadline, TimeLedger, round_size, slot_s
from .database_files import set_aside
from .kernel import MAX_PER_ITER, MIN_PER_ITER, tune_kernel
from .model_plan import (
    MIN_SHARE,
    SHARES_FILE,
    KernelTask,
    TaskGroup,
    group_tasks,
    plan_model,
    plan_other_ways,
    save_final_s,
    with_origin,
)
from .options import SearchOptions, tuning_target, work_dir_for
from .records import KERNEL_DIRS_FILE, commit_schedule, create_database, write_kernel_dirs
from .report import ModelTask, TuneResult
from .spaces.choice import choose_spaces
from .timing import (
    KernelSamplers,
    clearly_faster,
    compare_in_turns,
    final_model_timing,
    in_turns,
    kernel_module,
)
from .variants import Replay, join_variants, replay_decisions
from .winograd_layers import way_name, ways_not_taken
from .work_lock import hold_work_dir, waiting_progress

#: Where a work dir's kernels keep their databases under a work dir the user gave.
KERNELS_DIR = "kernels"

TaskStart = Callable[[int, int, "ModelTask"], None]


@dataclass
class _Outcome:
    """What the tasks of a run made: the rows, the kernels chosen, the totals."""

    rows: list[ModelTask] = field(default_factory=list)
    chosen: dict[str, Any] = field(default_factory=dict)
    workloads: dict[str, Any] = field(default_factory=dict)
    dirs: dict[str, str] = field(default_factory=dict)
    traces: list[Any] = field(default_factory=list)
    new: int = 0
    records: int = 0
    rpc_devices: int = 0  # the most RPC devices a kernel's search measured on at once
    rpc_lost: int = 0  # the most RPC servers a kernel's search saw leave
    stop_reason: str = "trials"
    interrupted: bool = False
    notes: list[str] = field(default_factory=list)


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
    budget reaches, :func:`planned_tasks`); ``search.on_progress`` gets each task's progress
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
        t.name: _kernel_dir(t.workload, target, search.space, kernels_root, search.cold)
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
    out = _tune_groups(groups, dirs, target, budget, search, ledger, on_task)
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


def _left_over(budget: Budget, ledger: TimeLedger, out: _Outcome, compare_s: float) -> bool:
    """Whether the tasks left some of the budget: time for a task and one more timing of two
    models (``compare_s``), or trials for a task."""
    if ledger.deadline.limited:
        return ledger.left_s() >= compare_s + ledger.min_slot_s()
    return budget.trials is not None and budget.trials - out.new >= MIN_TASK_TRIALS


def _tune_other_ways(
    mod: Any, plan: Any, planned: Any, out: _Outcome, origin: Any, run: _Run
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
        t.name: _kernel_dir(t.workload, run.target, search.space, run.kernels_root, search.cold)
        for t in tasks
    }
    write_kernel_dirs(run.work, {n: str(p) for n, p in {**run.dirs, **dirs}.items()})
    budget = run.budget
    if budget.trials is not None:
        budget = dataclasses.replace(budget, trials=max(0, budget.trials - out.new))
    run.ledger.final_s += plan.final_s  # the two tuned models are timed once more
    try:
        extra = _tune_groups(
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
    planned_t, other_t = _time_models(planned, other_mod, origin, run.target, search.rpc)
    ways = ", ".join(f"{key} {way_name(way)}" for key, way in ways_not_taken(plan.layers).items())
    if planned_t is None or other_t is None:
        out.notes.append(f"kept the planned ways: the model could not be timed with {ways}")
        return planned
    keep_other = other_t.median_s < planned_t.median_s
    out.notes.append(
        f"{'took' if keep_other else 'kept the planned ways over'} {ways}, both tuned: the "
        f"whole tuned model timed {other_t.median_s * 1e3:.3f} ms with it against "
        f"{planned_t.median_s * 1e3:.3f} ms as planned, in turns"
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


def _take_other(other: Any, out: _Outcome, extra: _Outcome) -> None:
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


def _kernel_dir(workload: Any, target: Any, space: Any, root: Path | None, cold: bool) -> Path:
    """A kernel's work dir (``root``: under a work dir the user gave), so every model with this
    kernel shares its records. Records timed ``cold`` keep their own database: beside a warm
    record (``%mlc_tune`` of that kernel alone) a cold one would look slow for its timing, not
    its schedule."""
    key = choose_spaces([workload], target, space).key + ("|cold" if cold else "")
    return work_dir_for(workload, target, "tir", key, root)


def _tune_groups(
    groups: list[TaskGroup], dirs: dict[str, Path], target: Any, budget: Budget,
    search: SearchOptions, ledger: TimeLedger, on_task: TaskStart | None,
) -> _Outcome:  # fmt: skip
    """Tune each group in turn within its slot of the budget; the rows of every kernel."""
    out = _Outcome()
    targets = _trial_targets([g.share for g in groups], budget.trials)
    planned = planned_tasks(budget, [g.share for g in groups])
    for index, group in enumerate(groups):
        task = group.lead
        task_trials = targets[index]
        task_time = None
        if ledger.deadline.limited:
            left = ledger.left_s()
            slot = slot_s([g.share for g in groups[index:]], left, ledger.min_slot_s())
            # the candidate in flight at the slot's end is measured: its time is kept free
            task_time = max(0.0, slot - ledger.task_overhead_s() - ledger.candidate_s())
            if task_time <= 0 and not out.interrupted:
                out.stop_reason = "time"  # a task left untuned because the time is spent
        if out.interrupted or task_trials == 0 or task_time == 0:
            out.rows += _default_rows(group)  # the budget is spent: default schedules
            continue
        if on_task is not None:
            lead = ModelTask(task.name, task.calls, group.share, 0, None, None, "default")
            on_task(index, planned, dataclasses.replace(lead, shared_with=_others(group)))
        per_iter = search.per_iter
        if per_iter is None and task_time is not None:
            per_iter = round_size(task_time, ledger.candidate_s(), MIN_PER_ITER, MAX_PER_ITER)
        began = perf_counter()
        work = dirs[task.name]
        options = dataclasses.replace(search, per_iter=per_iter)
        try:
            with hold_work_dir(
                work, wait=search.wait, on_wait=waiting_progress(search.on_progress, work)
            ):
                seeded = task.trace is not None and _seed_with_default(
                    task, target, work, search.cold
                )
                slot = ledger.deadline.within(task_time)
                result = _tune_task(task, target, task_trials, slot, work, options)
        except TuneError as err:  # one kernel's failed search must not lose the others'
            out.notes.append(f"{task.name} keeps its default schedule: {err}")
            out.rows += _default_rows(group)
            continue
        before, after = (
            _compare(task, result.mod, target, search.cold) if search.rpc is None else (None, None)
        )
        spent = perf_counter() - began
        ledger.note(result.elapsed_s, result.trials_new, spent)
        keep = clearly_faster(after, before)
        keep = keep or (search.rpc is not None and result.mod is not None)
        out.new += result.trials_new
        out.records += result.n_records
        out.rpc_devices = max(out.rpc_devices, result.rpc_devices)
        out.rpc_lost = max(out.rpc_lost, result.rpc_lost)
        out.traces.append(result.trace)
        out.interrupted = result.interrupted
        if result.stop_reason == "searched":  # the budget ended no task: the spaces did
            out.stop_reason = "searched" if out.stop_reason == "trials" else out.stop_reason
        elif result.stop_reason not in ("trials", ""):
            out.stop_reason = result.stop_reason
        out.workloads.update({t.name: task.workload for t in group.tasks})
        kept = "tuned" if keep else "default"
        reused = result.resumed_from - int(seeded)
        for member in group.tasks:
            out.dirs[member.name] = str(work)
            if keep:
                out.chosen[member.name] = result.mod["main"]
            lead = member is task
            out.rows.append(
                ModelTask(
                    member.name, member.calls, member.share, result.n_records, before, after,
                    kept, seconds=spent if lead else 0.0, new=result.trials_new if lead else 0,
                    reused=reused if lead else 0,
                    shared_with=_others(group, member),
                    replayed_on=_variant_names(group) if lead else (),
                )
            )  # fmt: skip
        for variant in group.variants:
            _replay_on(variant, task, result.trace, dirs, target, search, out)
    return out


def _variant_names(group: TaskGroup) -> tuple[str, ...]:
    return tuple(t.name for v in group.variants for t in v.tasks)


def _replay_on(
    variant: TaskGroup, lead: KernelTask, trace: Any, dirs: dict[str, Path], target: Any,
    search: SearchOptions, out: _Outcome,
) -> None:  # fmt: skip
    """Schedule an epilogue variant with the decisions of ``lead``'s best ``trace``; keep it
    where it is clearly faster than the variant's default schedule (timed in turns), keep the
    default otherwise, and say why when the decisions do not replay."""
    kernel = variant.lead
    began = perf_counter()
    replay = (
        replay_decisions(lead.workload, trace, kernel.workload, target, search.space)
        if trace is not None
        else Replay(None, reason="its search kept no schedule")
    )
    before = after = None
    if replay.mod is not None and search.rpc is None:
        before, after = compare_in_turns(
            kernel_module(kernel.default), kernel_module(replay.mod["main"]), target, search.cold
        )
    keep = replay.mod is not None and (clearly_faster(after, before) or search.rpc is not None)
    if replay.mod is None:
        out.notes.append(
            f"{kernel.name} keeps its default schedule: {lead.name}'s decisions do not replay "
            f"on it ({replay.reason})"
        )
    if keep:
        variant_dir = dirs[kernel.name]
        with hold_work_dir(
            variant_dir, wait=search.wait, on_wait=waiting_progress(search.on_progress, variant_dir)
        ):
            commit_schedule(variant_dir, kernel.workload, replay.trace, after, target)
        out.workloads.update({t.name: kernel.workload for t in variant.tasks})
    for member in variant.tasks:
        if keep:
            out.chosen[member.name] = replay.mod["main"]
            out.dirs[member.name] = str(dirs[kernel.name])
        out.rows.append(
            ModelTask(
                member.name, member.calls, member.share, 0, before, after,
                "tuned" if keep else "default",
                seconds=perf_counter() - began if member is kernel else 0.0,
                shared_with=_others(variant, member), replayed_from=lead.name,
            )
        )  # fmt: skip


def _others(group: TaskGroup, member: KernelTask | None = None) -> tuple[str, ...]:
    member = member or group.lead
    return tuple(t.name for t in group.tasks if t is not member)


def _default_rows(group: TaskGroup) -> list[ModelTask]:
    """Every kernel of the group and of its variants with its default schedule."""
    return [
        ModelTask(t.name, t.calls, t.share, 0, None, None, "default", shared_with=_others(g, t))
        for g in (group, *group.variants)
        for t in g.tasks
    ]


def planned_tasks(budget: Budget, shares: list[float]) -> int:
    """How many of the tasks (largest share first) a budget of trials reaches: each takes its
    share, at least :data:`~.budget.MIN_TASK_TRIALS`. A time budget may reach them all (each
    slot is decided when its task starts, at the pace measured by then)."""
    if budget.trials is None:
        return len(shares)
    return sum(1 for target in _trial_targets(shares, budget.trials) if target)


def _trial_targets(shares: list[float], trials: int | None) -> list[int | None]:
    """The records each group should have: its share of the trials, at least
    :data:`~.budget.MIN_TASK_TRIALS` (the smallest shares get none when not all fit). A group
    measures only what its database lacks, so records reused from an earlier run or another
    model spend none of the budget, and a rerun measures nothing new."""
    if trials is None:
        return [None] * len(shares)
    targets: list[int | None] = []
    left = trials
    for index in range(len(shares)):
        target = int(slot_s(shares[index:], float(left), float(MIN_TASK_TRIALS)))
        targets.append(target)
        left -= target
    return targets


def _tune_task(
    task: KernelTask, target: Any, trials: int | None, slot: Deadline, work: Path,
    search: SearchOptions,
) -> TuneResult:  # fmt: skip
    """Tune one kernel for ``trials`` and within its ``slot`` of the model's deadline."""
    workload = tvm().IRModule({task.name: task.func})  # the seed counts among earlier trials
    budget = Budget(trials, time_s=None, converge=False)  # the slot is the time
    return tune_kernel(
        workload, target, budget, search, work_dir=work, baseline=False, deadline=slot
    )


def _seed_with_default(task: KernelTask, target: Any, work: Path, cold: bool) -> bool:
    """Commit the default schedule to the database as a measured record (once per task), so the
    evolutionary search starts from it, timed as its candidates are (``cold``); ``True`` when it
    did now."""
    task_mod = task.workload
    database = create_database(work)
    if database.has_workload(task_mod) and database.get_top_k(
        database.commit_workload(task_mod), 1
    ):
        return False
    samplers = KernelSamplers(target, cold=cold)
    try:
        seconds = in_turns([samplers.add(kernel_module(task.default))], 1)[0]
    except MLCError:
        return False
    commit_schedule(work, task_mod, task.trace, seconds, target)
    return True


def _compare(
    task: KernelTask, tuned: Any, target: Any, cold: bool
) -> tuple[float | None, float | None]:
    """The default and the tuned kernel's seconds per call, timed in turns on shared buffers
    (``cold``: their weights flushed, as in the model)."""
    if tuned is None:
        return None, None
    return compare_in_turns(kernel_module(task.default), kernel_module(tuned["main"]), target, cold)


def _assemble(prepared: Any, chosen: dict[str, Any]) -> Any:
    """The model as built, each chosen tuned kernel in place of its default one."""
    out = prepared.clone()
    for name, func in chosen.items():
        kernel = func.with_attr("global_symbol", name).with_attr(IS_SCHEDULED_ATTR, True)
        out.update_func(out.get_global_var(name), kernel)
    return out


def _time_models(default: Any, tuned: Any, origin: Any, target: Any, rpc: Any) -> tuple[Any, Any]:
    """The default and the tuned model's ``Timing``\\ s, timed in turns (``None`` when the
    model cannot run here)."""
    variants = {
        "default": _variant(default, origin, target),
        "tuned": _variant(tuned, origin, target),
    }
    try:
        report = time_functions(variants, target, baselines=False, rpc=rpc)
    except MLCError:
        return None, None
    return report["default"], report["tuned"]


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
