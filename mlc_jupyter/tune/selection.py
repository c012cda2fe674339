"""Pick each task's schedule at the end of a run: its best record, re-timed against the others.

During the search a candidate is timed briefly, so the top few are close to each other and the
first place can be noise. For TensorIR tasks the ``RETIME_TOP_K`` fastest records are timed again
in turns (:func:`~.timing.in_turns`) on shared argument buffers (:class:`~.timing.KernelSamplers`)
and the one with the lowest median wins.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..tvm_compat import Schedule
from .tasks import Tasks
from .timing import KernelSamplers, in_turns

#: How many of a task's fastest records are re-timed at the end to pick the one returned.
RETIME_TOP_K = 5
#: Rounds of the final re-timing: one sample of each of the top records per round.
RETIME_ROUNDS = 7


@dataclass
class Best:
    """Each task's chosen scheduled module and trace, and (TensorIR) its re-timed latency."""

    mods: dict[str, Any] = field(default_factory=dict)
    traces: dict[str, Any] = field(default_factory=dict)
    retimed_s: dict[str, float] = field(default_factory=dict)
    #: the mean of the chosen record's measurements during the search
    measured_s: dict[str, float] = field(default_factory=dict)


def _scheduled(mod: Any, trace: Any) -> Any:
    sch = Schedule(mod)
    trace.apply_to_schedule(sch, remove_postproc=False)
    return sch.mod


def _mean(record: Any) -> float | None:
    secs = [float(x) for x in (record.run_secs or ())]
    return sum(secs) / len(secs) if secs else None


def best_schedules(
    database: Any, tasks: Tasks, target: Any, *, retime: bool = True, cold: bool = False
) -> Best:
    """Each task's best schedule in ``database`` (TensorIR: the top records re-timed in turns,
    ``cold`` as :class:`~.timing.KernelSamplers` has it).

    ``retime=False`` (candidates measured on an RPC device, which this machine cannot time)
    takes each task's fastest record as measured.
    """
    out = Best()
    k = RETIME_TOP_K if tasks.kind == "tir" and retime else 1
    for name, mod in zip(tasks.names, tasks.mods, strict=False):
        if not database.has_workload(mod):
            continue
        top = database.get_top_k(database.commit_workload(mod), k)
        if top and _mean(top[0]) is not None:
            out.measured_s[name] = _mean(top[0])
        if k == 1:
            if top:
                out.mods[name], out.traces[name] = _scheduled(mod, top[0].trace), top[0].trace
            continue
        contenders = []
        samplers = KernelSamplers(target, cold=cold)
        for record in top:
            scheduled = _scheduled(mod, record.trace)
            try:
                contenders.append((scheduled, record.trace, samplers.add(scheduled)))
            except Exception:  # noqa: BLE001,S112 - a record that no longer builds is skipped
                continue
        if not contenders:
            continue
        medians = in_turns([sampler for _, _, sampler in contenders], RETIME_ROUNDS)
        best = min(range(len(contenders)), key=medians.__getitem__)
        out.mods[name], out.traces[name] = contenders[best][0], contenders[best][1]
        out.retimed_s[name] = medians[best]
    return out
