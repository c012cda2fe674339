"""A whole model's tasks tuned one after the other, each in its slot of the model's budget.

Each group of kernels of one structure is searched once (:func:`.kernel.tune_kernel`, in the
kernel's own work dir, its default schedule committed first so the search starts from it), its
result kept where it is clearly faster than the default schedule, and its epilogue variants
given its best decisions (:mod:`.variants`). :mod:`.whole_model` plans the tasks, runs them here
(in a second pass too) and builds and times the tuned model.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter
from typing import Any

from ..errors import MLCError, TuneError
from ..tvm_compat import tvm
from .budget import MIN_TASK_TRIALS, Budget, Deadline, TimeLedger, round_size, slot_s
from .kernel import MAX_PER_ITER, MIN_PER_ITER, tune_kernel
from .model_plan import KernelTask, TaskGroup
from .options import SearchOptions, work_dir_for
from .records import commit_schedule, create_database
from .report import ModelTask, TuneResult
from .spaces.choice import choose_spaces
from .timing import (
    KernelSamplers,
    clearly_faster,
    compare_in_turns,
    in_turns,
    kernel_module,
)
from .variants import Replay, replay_decisions
from .work_lock import hold_work_dir, waiting_progress

TaskStart = Callable[[int, int, "ModelTask"], None]


@dataclass
class TasksOutcome:
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


def kernel_dir(workload: Any, target: Any, space: Any, root: Path | None, cold: bool) -> Path:
    """A kernel's work dir (``root``: under a work dir the user gave), so every model with this
    kernel shares its records. Records timed ``cold`` keep their own database: beside a warm
    record (``%mlc_tune`` of that kernel alone) a cold one would look slow for its timing, not
    its schedule."""
    key = choose_spaces([workload], target, space).key + ("|cold" if cold else "")
    return work_dir_for(workload, target, "tir", key, root)


def tune_groups(
    groups: list[TaskGroup], dirs: dict[str, Path], target: Any, budget: Budget,
    search: SearchOptions, ledger: TimeLedger, on_task: TaskStart | None,
) -> TasksOutcome:  # fmt: skip
    """Tune each group in turn within its slot of the budget; the rows of every kernel."""
    out = TasksOutcome()
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
            out.rows += default_rows(group)  # the budget is spent: default schedules
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
            out.rows += default_rows(group)
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
    search: SearchOptions, out: TasksOutcome,
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


def default_rows(group: TaskGroup) -> list[ModelTask]:
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


__all__ = [
    "TaskStart",
    "TasksOutcome",
    "default_rows",
    "kernel_dir",
    "planned_tasks",
    "tune_groups",
]
