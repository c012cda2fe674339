"""Tuning a whole Relax model: one task per kernel, the budget spent where the latency is.

MetaSchedule's own Relax flow starts every task with a full round of candidates before its task
scheduler looks at latencies, so a ResNet-18 (twenty-odd kernels) spends its first thousand
trials on warming up. Here:

1. The model is prepared as a build prepares it (:mod:`~mlc_jupyter.compilation.default_schedule`:
   legalised, fused, each kernel given a default schedule); those kernels are the tasks, and so
   are the PrimFuncs the module brings itself (called with ``R.call_tir`` or
   ``R.call_dps_packed``), unless their shapes are symbolic. ``func`` picks one (the book's §4.6).
2. A per-kernel profile of the default build gives each task its share of the model's latency;
   a kernel under :data:`MIN_SHARE` keeps its default schedule. Kernels of the same structure
   (structurally equal workloads) are one task: tuned once, the result used by each.
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
5. A tuned kernel replaces the default one only when it is faster (by :data:`KEEP_MARGIN`), both
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
    structural_equal,
    structural_hash,
    tvm,
)
from .budget import MIN_TASK_TRIALS, Budget, TimeLedger, budget_for, round_size, slot_s
from .kernel import MAX_PER_ITER, MIN_PER_ITER, tune_kernel
from .options import SearchOptions, tuning_target, work_dir_for
from .records import create_database, write_kernel_dirs
from .report import ModelTask, TuneResult
from .spaces import choose_spaces
from .tasks import collect_tasks
from .timing import KernelSamplers, in_turns

#: A kernel with a smaller share of the model's latency keeps its default schedule.
MIN_SHARE = 0.01
#: A tuned kernel replaces the default one only when it is faster by more than this share (a
#: tie within the noise of the timing keeps the schedule the build already has).
KEEP_MARGIN = 0.02
#: Where a work dir keeps each kernel's calls, seconds and share of the model's latency, and how
#: long the plan and the end of the last run took.
SHARES_FILE = "model_shares.json"
#: Where a work dir's kernels keep their databases under a work dir the user gave.
KERNELS_DIR = "kernels"
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
    workload: Any = None  # the kernel as its database stores it (``main``, no-alias)


@dataclass
class _Group:
    """Kernels of one structure: tuned once (the first, the largest share), used by all."""

    tasks: list[_Task]

    @property
    def lead(self) -> _Task:
        return self.tasks[0]

    @property
    def share(self) -> float:
        return sum(t.share for t in self.tasks)


@dataclass
class _Plan:
    prepared: Any
    tasks: list[_Task] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # kernels that cannot be tuned, and why
    profiled: bool = True
    final_s: float = 0.0  # what the end of the run is expected to take


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
    stop_reason: str = "trials"
    interrupted: bool = False


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
    start = perf_counter()
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
    groups = _groups(tuned_tasks)
    kernels_root = work / KERNELS_DIR if work_dir else None
    dirs = {
        t.name: _kernel_dir(t.workload, target, search.space, kernels_root) for t in tuned_tasks
    }
    if fresh:
        for path in set(dirs.values()):
            shutil.rmtree(path, ignore_errors=True)
    write_kernel_dirs(work, {name: str(path) for name, path in dirs.items()})
    deadline = None if budget.time_s is None else start + budget.time_s
    ledger = TimeLedger(deadline, plan.final_s)
    planned = perf_counter()
    out = _tune_groups(groups, dirs, target, budget, search, ledger, on_task)
    out.rows += [
        ModelTask(t.name, t.calls, t.share, 0, None, None, "default")
        for t in plan.tasks
        if t not in tuned_tasks
    ]
    tuned = perf_counter()
    tuned_mod = _assemble(plan.prepared, out.chosen)
    baseline, latency, timing = _time_models(plan.prepared, tuned_mod, origin, target, search.rpc)
    end = perf_counter()
    _save_final_s(work, end - tuned)
    return TuneResult(
        workload=mod,
        mod=tuned_mod,
        trace=next((t for t in out.traces if t is not None), None),  # of the largest kernel tuned
        best_latency_s=latency,
        baseline_latency_s=baseline,
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
        stop_reason="interrupted" if out.interrupted else out.stop_reason,
        timing=timing,
        time_budget_s=budget.time_s,
        model_tasks=tuple(sorted(out.rows, key=lambda r: -r.share)),
        notes=tuple(plan.skipped),
        origin=origin,
        task_work_dirs=out.dirs,
        phases={"plan": planned - start, "tasks": tuned - planned, "final": end - tuned},
    )


def _groups(tasks: list[_Task]) -> list[_Group]:
    """The tasks grouped by structure (their workloads structurally equal), largest share first."""
    groups: dict[int, list[_Group]] = {}
    for task in tasks:  # tasks come largest share first, so each group's lead is its largest
        candidates = groups.setdefault(int(structural_hash(task.workload)), [])
        same = next(
            (g for g in candidates if structural_equal(g.lead.workload, task.workload)), None
        )
        if same is None:
            candidates.append(_Group([task]))
        else:
            same.tasks.append(task)
    return sorted((g for gs in groups.values() for g in gs), key=lambda g: -g.share)


def _kernel_dir(workload: Any, target: Any, space: Any, root: Path | None) -> Path:
    """A kernel's work dir: the one ``%mlc_tune`` of that kernel alone uses (``root``: under a
    work dir the user gave), so every model with this kernel shares its records."""
    key = choose_spaces([workload], target, space).key
    return work_dir_for(workload, target, "tir", key, root)


def _tune_groups(
    groups: list[_Group], dirs: dict[str, Path], target: Any, budget: Budget,
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
        if ledger.deadline is not None:
            left = ledger.left_s(perf_counter(), budget.time_s or 0.0)
            slot = slot_s([g.share for g in groups[index:]], left, ledger.min_slot_s())
            task_time = max(0.0, slot - ledger.task_overhead_s())
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
        seeded = task.trace is not None and _seed_with_default(task, target, work)
        options = dataclasses.replace(search, per_iter=per_iter)
        result = _tune_task(task, target, task_trials, task_time, work, options)
        before, after = _compare(task, result.mod, target) if search.rpc is None else (None, None)
        spent = perf_counter() - began
        ledger.note(result.elapsed_s, result.trials_new, spent)
        keep = after is not None and before is not None and after < before * (1 - KEEP_MARGIN)
        keep = keep or (search.rpc is not None and result.mod is not None)
        out.new += result.trials_new
        out.records += result.n_records
        out.traces.append(result.trace)
        out.interrupted = result.interrupted
        if result.stop_reason not in ("trials", ""):
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
                )
            )  # fmt: skip
    return out


def _others(group: _Group, member: _Task | None = None) -> tuple[str, ...]:
    member = member or group.lead
    return tuple(t.name for t in group.tasks if t is not member)


def _default_rows(group: _Group) -> list[ModelTask]:
    return [
        ModelTask(t.name, t.calls, t.share, 0, None, None, "default", shared_with=_others(group, t))
        for t in group.tasks
    ]


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
        workload = collect_tasks(tvm().IRModule({name: source}), target).mods[0]
        plan.tasks.append(_Task(name, source, kernel, prepared.traces.get(name), workload=workload))
    if func is not None and not any(t.name == func for t in plan.tasks) and not plan.skipped:
        names = sorted(
            gv.name_hint
            for gv, f in prepared.mod.functions_items()
            if isinstance(f, prim_func_type())
        )
        raise TuneError(
            f"no kernel {func!r} in this model", hint=f"its kernels: {', '.join(names) or 'none'}"
        )
    saved = _saved(work)
    kernels = saved.get("kernels", {})
    if kernels and {t.name for t in plan.tasks} <= set(kernels):
        for task in plan.tasks:
            task.calls, task.seconds, task.share = kernels[task.name]
        plan.tasks.sort(key=lambda t: -t.share)
        plan.final_s = float(saved.get("final_s") or saved.get("plan_s") or 0.0)
        return plan
    began = perf_counter()
    _profile(plan, target, origin)
    # the end builds the tuned model and times it beside the default one: about the profile's work
    plan.final_s = float(saved.get("final_s") or perf_counter() - began)
    if plan.profiled:
        rows = {t.name: [t.calls, t.seconds, t.share] for t in plan.tasks}
        _save(work, {**saved, "kernels": rows, "plan_s": perf_counter() - began})
    return plan


def _saved(work: Path) -> dict[str, Any]:
    """What the work dir's :data:`SHARES_FILE` holds (nothing when missing, torn or older)."""
    try:
        saved = json.loads((work / SHARES_FILE).read_text())
        kernels = saved["kernels"]
        saved["kernels"] = {n: (int(c), float(s), float(f)) for n, (c, s, f) in kernels.items()}
        return saved
    except (OSError, ValueError, TypeError, KeyError):
        return {}


def _save(work: Path, saved: dict[str, Any]) -> None:
    work.mkdir(parents=True, exist_ok=True)
    (work / SHARES_FILE).write_text(json.dumps(saved, indent=1))


def _save_final_s(work: Path, seconds: float) -> None:
    """Keep how long the end took, so the next run of this model keeps that much time for it."""
    saved = _saved(work)
    if saved:
        _save(work, {**saved, "final_s": seconds})


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
    task: _Task, target: Any, trials: int | None, seconds: float | None, work: Path,
    search: SearchOptions,
) -> TuneResult:  # fmt: skip
    workload = tvm().IRModule({task.name: task.func})  # the seed counts among earlier trials
    return tune_kernel(
        workload, target, budget_for(trials, seconds), search, work_dir=work, baseline=False
    )


def _seed_with_default(task: _Task, target: Any, work: Path) -> bool:
    """Commit the default schedule to the database as a measured record (once per task), so the
    evolutionary search starts from it; ``True`` when it did now."""
    ms = metaschedule()
    task_mod = task.workload
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
