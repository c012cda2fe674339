"""A work dir's tuning database: open or create it, what it already holds, its best records."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import TuneError
from ..tvm_compat import Schedule, metaschedule, structural_hash
from .tasks import Tasks

WORKLOADS_FILE = "database_workload.json"
RECORDS_FILE = "database_tuning_record.json"


@dataclass(frozen=True)
class Record:
    """One measured candidate: its trace, the workload it schedules, its mean latency."""

    trace: Any
    workload_mod: Any
    latency_s: float
    run_secs: tuple[float, ...]
    target: Any = None


def _json_database(work: Path, allow_missing: bool) -> Any:
    return metaschedule().database.JSONDatabase(
        path_workload=str(work / WORKLOADS_FILE),
        path_tuning_record=str(work / RECORDS_FILE),
        module_equality="structural",
        allow_missing=allow_missing,
    )


def create_database(work_dir: Path, fresh: bool = False) -> Any:
    """The database of ``work_dir``, created (with its ``logs`` folder) if missing.

    ``fresh=True`` deletes whatever the work dir held first.
    """
    if fresh and work_dir.exists():
        shutil.rmtree(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    (work_dir / "logs").mkdir(exist_ok=True)
    return _json_database(work_dir, allow_missing=True)


def open_database(work_dir: str | Path) -> Any:
    """The JSON database of a tuning work dir (refuses a folder without one)."""
    work = Path(work_dir)
    if not (work / RECORDS_FILE).is_file() or not (work / WORKLOADS_FILE).is_file():
        raise TuneError(
            f"{work} holds no tuning database",
            hint="give the work dir that %mlc_tune printed (TuneResult.work_dir)",
        )
    return _json_database(work, allow_missing=False)


@dataclass
class Measured:
    """What a database already holds for a run's tasks, so that the run resumes."""

    count: int = 0  # records of these tasks, failed ones included
    known: dict[int, list[float]] = field(default_factory=dict)  # scheduled-module hash -> secs
    curves: dict[str, list[tuple[int, float]]] = field(default_factory=dict)  # best-so-far


def measured_before(database: Any, tasks: Tasks) -> Measured:
    """The records ``database`` holds for ``tasks``: how many, their timings, the best curves."""
    task_hashes = {
        int(structural_hash(m)): name for name, m in zip(tasks.names, tasks.mods, strict=False)
    }
    out = Measured()
    best: dict[str, float] = {}
    for record in database.get_all_tuning_records():
        name = task_hashes.get(int(structural_hash(record.workload.mod)))
        if name is None:
            continue
        out.count += 1
        if record.run_secs is None or not len(record.run_secs):
            continue
        secs = [float(x) for x in record.run_secs]
        try:
            sch = Schedule(record.workload.mod)
            record.trace.apply_to_schedule(sch, remove_postproc=False)
            out.known[int(structural_hash(sch.mod))] = secs
        except Exception:  # noqa: BLE001,S112 - a stale record is simply not reused
            continue
        mean = sum(secs) / len(secs)
        if mean < best.get(name, float("inf")):
            best[name] = mean
            out.curves.setdefault(name, []).append((out.count, mean))
    return out


def top_records(work_dir: str | Path, k: int = 10) -> list[Record]:
    """The ``k`` fastest successfully measured records of a work dir, fastest first."""
    database = open_database(work_dir)
    out = []
    for rec in database.get_all_tuning_records():
        if rec.run_secs is None or not len(rec.run_secs):
            continue
        secs = tuple(float(x) for x in rec.run_secs)
        if min(secs) >= 1e9:  # MetaSchedule's marker of a failed run
            continue
        out.append(Record(rec.trace, rec.workload.mod, sum(secs) / len(secs), secs, rec.target))
    out.sort(key=lambda r: r.latency_s)
    return out[:k]
