"""A whole model's tuning plan: its kernels as tasks, their shares of the model's latency, and
kernels of one structure grouped (tuned once).

The model is prepared as a build prepares it (:mod:`~mlc_jupyter.compilation.default_schedule`),
with the layers the tuning computes another way than the build (direct or a Winograd tile,
:mod:`.winograd_layers`); a per-kernel profile of that model gives each kernel its share. All
three are kept in the model's work dir (:data:`SHARES_FILE`), with how long the plan and the
last run's end took, so a run that resumes makes the same plan, splits its budget as the first
did and knows what its end will cost.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter
from typing import Any

from ..compilation import build_module
from ..compilation.default_schedule import Prepared, has_operators, prepare_model
from ..errors import MLCError, TuneError
from ..measure import profile_kernels
from ..tvm_compat import (
    param_buffers,
    prim_func_type,
    structural_equal,
    structural_hash,
    tvm,
    var_dtype,
)
from .database_files import write_lines
from .tasks import collect_tasks, scalar_params
from .winograd_layers import LayerChoice, as_saved, choose_layers, chosen, ways_not_taken

#: A kernel with a smaller share of the model's latency keeps its default schedule.
MIN_SHARE = 0.01
#: The key under which :data:`SHARES_FILE` keeps how each layer is computed (and why).
LAYER_WAYS = "layer_ways"
#: Where a work dir keeps each kernel's calls, seconds and share of the model's latency, and how
#: long the plan and the end of the last run took.
SHARES_FILE = "model_shares.json"


@dataclass
class KernelTask:
    """One kernel of the model: what is tuned, what the build uses, its share."""

    name: str
    func: Any  # the kernel to tune (unscheduled)
    default: Any  # the kernel a build uses (default schedule, or the hand-written one)
    trace: Any = None  # the default schedule's trace, when it has one
    calls: int = 0
    seconds: float = 0.0  # per model call, from the profile
    share: float = 0.0
    workload: Any = None  # the kernel as its database stores it (``main``, no-alias)


@dataclass
class TaskGroup:
    """Kernels of one structure: tuned once (the first, the largest share), used by all.

    ``variants`` are groups whose kernels share this one's anchor operator with another
    epilogue (:mod:`.variants`): not searched, the lead's best decisions replayed on them, so
    the group's share of the budget is theirs too.
    """

    tasks: list[KernelTask]
    variants: list[TaskGroup] = field(default_factory=list)

    @property
    def lead(self) -> KernelTask:
        """The kernel tuned for the group (the largest share)."""
        return self.tasks[0]

    @property
    def share(self) -> float:
        """The group's share of the model's latency, its variants' included."""
        return sum(t.share for t in self.tasks) + sum(v.share for v in self.variants)


@dataclass
class ModelPlan:
    """The model as tuned, its kernels (largest share first) and what the plan learned."""

    prepared: Any  # the model with its default schedules, each layer computed the way chosen
    tasks: list[KernelTask] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # kernels that cannot be tuned, and why
    notes: list[str] = field(default_factory=list)  # what the plan chose for the user to know
    default_build: Any = None  # the model a build makes (``prepared`` when no layer changed)
    profiled: bool = True
    final_s: float = 0.0  # what the end of the run is expected to take
    layers: list[LayerChoice] = field(default_factory=list)  # each layer's ways, as timed
    #: (a plan of the layers' other ways) its kernels that another plan has too: name -> name there
    same: dict[str, str] = field(default_factory=dict)


def group_tasks(tasks: list[KernelTask]) -> list[TaskGroup]:
    """The tasks grouped by structure (their workloads structurally equal), largest share first."""
    groups: dict[int, list[TaskGroup]] = {}
    for task in tasks:  # tasks come largest share first, so each group's lead is its largest
        candidates = groups.setdefault(int(structural_hash(task.workload)), [])
        same = next(
            (g for g in candidates if structural_equal(g.lead.workload, task.workload)), None
        )
        if same is None:
            candidates.append(TaskGroup([task]))
        else:
            same.tasks.append(task)
    return sorted((g for gs in groups.values() for g in gs), key=lambda g: -g.share)


def plan_model(mod: Any, target: Any, func: str | None, origin: Any, work: Path) -> ModelPlan:
    """The model as tuned, its tasks and their shares of the model's latency.

    The ways the layers are computed (whole models only, :mod:`.winograd_layers`) and the
    shares are measured once per work dir and kept there (:data:`SHARES_FILE`): a run that
    resumes makes the same plan and splits its budget as the first run did.
    """
    saved = _saved(work)
    operators = has_operators(mod)
    choices = (
        choose_layers(mod, target, saved.get(LAYER_WAYS)) if operators and func is None else []
    )
    layers = chosen(choices)
    prepared = (
        prepare_model(mod, target, winograd_tiles=layers) if operators else Prepared(mod, fused=mod)
    )
    plan = ModelPlan(prepared.mod, notes=[c.note() for c in choices], layers=choices)
    plan.default_build = prepare_model(mod, target).mod if layers else prepared.mod
    _add_tasks(plan, prepared, target, func)
    if func is not None and not any(t.name == func for t in plan.tasks) and not plan.skipped:
        names = sorted(
            gv.name_hint
            for gv, f in prepared.mod.functions_items()
            if isinstance(f, prim_func_type())
        )
        raise TuneError(
            f"no kernel {func!r} in this model", hint=f"its kernels: {', '.join(names) or 'none'}"
        )
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
        _save(
            work,
            {
                **saved,
                "kernels": rows,
                LAYER_WAYS: as_saved(choices),
                "plan_s": perf_counter() - began,
            },
        )
    return plan


def plan_other_ways(mod: Any, target: Any, plan: ModelPlan, origin: Any) -> ModelPlan | None:
    """The model with each layer that ``plan`` timed two ways in the whole model computed the
    way not taken (:func:`.winograd_layers.ways_not_taken`), its kernels profiled; ``same``
    names those ``plan`` has too (structurally equal workloads), whose tuned schedules it can
    take. ``None`` when no layer was timed two ways."""
    other_ways = ways_not_taken(plan.layers)
    if not other_ways:
        return None
    prepared = prepare_model(mod, target, winograd_tiles={**chosen(plan.layers), **other_ways})
    other = ModelPlan(prepared.mod, default_build=plan.default_build)
    _add_tasks(other, prepared, target, None)
    _profile(other, target, origin)
    for task in other.tasks:
        equal = [t.name for t in plan.tasks if structural_equal(t.workload, task.workload)]
        unused = [n for n in equal if n not in other.same.values()]
        if equal:  # the kernel of that name, else one not matched yet: one row each
            other.same[task.name] = task.name if task.name in equal else (unused or equal)[0]
    return other


def _add_tasks(plan: ModelPlan, prepared: Prepared, target: Any, func: str | None) -> None:
    """Each kernel of ``prepared`` (``func`` only, when given) as a task of ``plan``, or among
    its skipped ones with the reason."""
    made = set(prepared.scheduled) | set(prepared.unscheduled)
    for gv, kernel in prepared.mod.functions_items():
        name = gv.name_hint
        if not isinstance(kernel, prim_func_type()) or (func is not None and name != func):
            continue
        source = prepared.fused[name] if name in made else kernel
        if not _static(source):
            plan.skipped.append(f"{name} has symbolic shapes (MetaSchedule tunes fixed shapes)")
            continue
        scalars = scalar_params(source)
        if scalars:
            listed = ", ".join(f"{p.name}: {var_dtype(p)}" for p in scalars)
            plan.skipped.append(
                f"{name} takes a scalar parameter ({listed}) and keeps its default schedule "
                "(MetaSchedule measures candidates on buffers only; tune it alone with bind)"
            )
            continue
        workload = collect_tasks(tvm().IRModule({name: source}), target).mods[0]
        plan.tasks.append(
            KernelTask(name, source, kernel, prepared.traces.get(name), workload=workload)
        )


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
    """Replace the plan file in one rename: a reader, or a writer killed mid-write, never
    leaves a torn file (which would cost the next run its plan)."""
    work.mkdir(parents=True, exist_ok=True)
    write_lines(work / SHARES_FILE, (json.dumps(saved, indent=1).encode(),))


def save_final_s(work: Path, seconds: float) -> None:
    """Keep how long the end took, so the next run of this model keeps that much time for it."""
    saved = _saved(work)
    if saved:
        _save(work, {**saved, "final_s": seconds})


def _static(func: Any) -> bool:
    try:
        return all(int(d) >= 0 for b in param_buffers(func) for d in b.shape)
    except (TypeError, ValueError, AttributeError):
        return False


def _profile(plan: ModelPlan, target: Any, origin: Any) -> None:
    """Each task's calls, seconds and share of the model's latency (equal shares when the model
    cannot run here, e.g. with inputs whose shapes are symbolic)."""
    try:
        built = build_module(plan.prepared, target)
        if origin is not None:
            built = with_origin(built, origin)
        profile = profile_kernels(built, runs=5)
    except MLCError:
        plan.profiled = False
        for task in plan.tasks:
            task.share = 1.0 / len(plan.tasks)
        return
    whole = profile.kernel_s + profile.beyond_kernels_s
    by_name = {k.name: k for k in profile.kernels}
    for task in plan.tasks:
        kernel = by_name.get(task.name)
        if kernel is not None:
            task.calls, task.seconds = kernel.calls, kernel.seconds
            task.share = kernel.seconds / whole if whole else 0.0
    plan.tasks.sort(key=lambda t: -t.share)


def with_origin(built: Any, origin: Any) -> Any:
    """A build that remembers the imported model it came from."""
    return dataclasses.replace(built, origin=origin)
