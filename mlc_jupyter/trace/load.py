"""Turn what a user holds (a Schedule, a Trace, JSON, a tune result, a database record) into a trace.

Each source gives a trace and, where it knows one, the module the trace was recorded on. A
``Schedule`` does not remember its original module, so the caller passes ``mod`` or a list of
candidate modules (e.g. the notebook's IRModules); the one the trace replays onto is taken.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..compilation.foreign import check_module, check_trace
from ..errors import TraceError, error_reason
from ..tune import top_records
from ..tune.report import TuneResult
from ..tvm_compat import (
    Schedule,
    apply_json_trace,
    ir_module_type,
    prim_func_type,
    schedule_type,
    structural_equal,
    trace_type,
)


@dataclass(frozen=True)
class TraceSource:
    """A trace, the module it schedules, and (when known) the module it produced."""

    trace: Any
    mod: Any
    final: Any = None
    label: str = "trace"
    #: the target the trace was tuned for (a tune result's, a record's), ``None`` when unknown
    target: Any = None


def to_json_value(obj: Any) -> Any:
    """``Trace.as_json()`` output as plain JSON values (TVM gives ``IntImm`` for some numbers)."""
    if isinstance(obj, bool | int | float | str) or obj is None:
        return obj
    if isinstance(obj, list | tuple):
        return [to_json_value(x) for x in obj]
    if isinstance(obj, dict):
        return {str(k): to_json_value(v) for k, v in obj.items()}
    if hasattr(obj, "value"):
        return obj.value
    return str(obj)


def as_module(mod: Any) -> Any:
    """An IRModule from an IRModule or a PrimFunc (named ``main``)."""
    if isinstance(mod, ir_module_type()):
        return mod
    if isinstance(mod, prim_func_type()):
        return ir_module_type()({"main": mod})
    raise TraceError(
        f"a trace replays on an IRModule or a PrimFunc, not a {type(mod).__name__}",
        hint="pass the module the schedule was created from with --mod",
    )


def replays(trace: Any, mod: Any) -> Any:
    """The module ``trace`` produces on ``mod``, or ``None`` when it does not replay there."""
    try:
        sch = Schedule(as_module(mod))
        trace.apply_to_schedule(sch, remove_postproc=False)
        return sch.mod
    except Exception:  # noqa: BLE001 - any TVM failure means "not this module"
        return None


def _trace_from_json(obj: Any, mod: Any) -> Any:
    if isinstance(obj, str):
        try:
            obj = json.loads(obj)
        except json.JSONDecodeError as err:
            raise TraceError(f"the text is not a JSON trace: {err.msg} at {err.pos}") from None
    if mod is None:
        raise TraceError(
            "a JSON trace needs the module it was recorded on",
            hint="pass it with --mod MOD (or mod=MOD)",
        )
    check_trace(obj, "the JSON trace")
    sch = Schedule(as_module(mod))
    try:
        apply_json_trace(obj, sch)
    except Exception as err:  # noqa: BLE001
        raise TraceError(
            f"the JSON trace does not replay on this module: {error_reason(err)}"
        ) from None
    return sch.trace


def _is_dir(text: str) -> bool:
    try:
        return len(text) < 4096 and "\n" not in text and Path(text).is_dir()
    except OSError:
        return False


def _pick_module(trace: Any, final: Any, candidates: Iterable[Any], label: str) -> Any:
    """The first candidate the trace replays onto (giving ``final`` when it is known)."""
    for cand in itertools.islice(candidates, 50):
        out = replays(trace, cand)
        if out is not None and (final is None or structural_equal(out, final)):
            return as_module(cand)
    raise TraceError(
        f"cannot tell which module the {label} was recorded on",
        hint="pass the original module with --mod MOD (a Schedule forgets it)",
    )


def _record(trace: Any, workload: Any, mod: Any, work_dir: Any, target: Any) -> TraceSource:
    """A tuning record's source, once its trace (and its workload, when no ``mod`` replaces it)
    passed the check of code from a database (:mod:`~mlc_jupyter.compilation.foreign`)."""
    where = f"the best tuning record in {work_dir}" if work_dir else "the tuning record"
    check_trace(trace, where)
    if mod is None:
        check_module(workload, f"the workload of {where}")
    return TraceSource(trace, as_module(mod or workload), None, "tuning record", target)


def load(obj: Any, mod: Any = None, candidates: Iterable[Any] = ()) -> TraceSource:
    """Read a trace and its module from any of the sources the widget accepts.

    Parameters
    ----------
    obj
        ``Schedule``, ``Trace``, JSON text or value, ``TuneResult``, a tuning record (ours or
        MetaSchedule's), a list of records (the first is used), a tuning work dir, or an object
        driving a schedule of a module it keeps (``.sch``, ``.start_mod``: a course TE
        schedule). What comes from a file or a database (JSON, records, a work dir) is checked
        as code first (:func:`~mlc_jupyter.compilation.foreign.check_trace`).
    mod
        The module the trace was recorded on (needed for a Schedule, Trace or JSON unless
        ``candidates`` contains it).
    candidates
        Modules to try when ``mod`` is not given.
    """

    if isinstance(obj, list | tuple) and obj and not isinstance(obj[0], list | str):
        obj = obj[0]
    from_dir = None
    if isinstance(obj, Path) or (isinstance(obj, str) and _is_dir(obj)):
        records = top_records(obj, 1)
        if not records:
            raise TraceError(f"{obj} holds no successful tuning record")
        obj, from_dir = records[0], obj
    if isinstance(obj, TuneResult):
        workloads = list(obj.task_workloads.values()) or [obj.workload]
        final = obj.mod if obj.kind == "tir" and len(workloads) == 1 else None
        if obj.trace is None:
            raise TraceError("this tune result holds no trace (no candidate ran)")
        chosen = mod if mod is not None else _pick_module(obj.trace, None, workloads, "trace")
        return TraceSource(obj.trace, as_module(chosen), final, "tune result", obj.target)
    if hasattr(obj, "trace") and hasattr(obj, "workload_mod"):  # tune.records.Record
        return _record(obj.trace, obj.workload_mod, mod, from_dir, obj.target)
    if hasattr(obj, "trace") and hasattr(obj, "workload") and hasattr(obj, "run_secs"):
        return _record(obj.trace, obj.workload.mod, mod, from_dir, None)
    start = getattr(obj, "start_mod", None)
    if start is not None and isinstance(getattr(obj, "sch", None), schedule_type()):
        # drives a TensorIR schedule of a module it keeps (course mode's TE schedule)
        return TraceSource(obj.sch.trace, as_module(mod or start), obj.sch.mod, "TE schedule")
    if isinstance(obj, schedule_type()):
        final = obj.mod
        chosen = mod if mod is not None else _pick_module(obj.trace, final, candidates, "schedule")
        return TraceSource(obj.trace, as_module(chosen), final, "schedule")
    if isinstance(obj, trace_type()):
        chosen = mod if mod is not None else _pick_module(obj, None, candidates, "trace")
        return TraceSource(obj, as_module(chosen), None, "trace")
    if isinstance(obj, str | list | dict):
        return TraceSource(_trace_from_json(obj, mod), as_module(mod), None, "JSON trace")
    raise TraceError(
        f"cannot read a trace from a {type(obj).__name__}",
        hint="give a Schedule, a Trace, a trace as JSON, a tune result or a tuning record",
    )
