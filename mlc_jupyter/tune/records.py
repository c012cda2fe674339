"""Read a work dir's database: the best records, for the trace replay widget and for reports."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import TuneError
from ..tvm_compat import meta_schedule


@dataclass(frozen=True)
class Record:
    """One measured candidate: its trace, the workload it schedules, its mean latency."""

    trace: Any
    workload_mod: Any
    latency_s: float
    run_secs: tuple[float, ...]
    target: Any = None


def open_database(work_dir: str | Path) -> Any:
    """The JSON database of a tuning work dir (refuses a folder without one)."""
    work = Path(work_dir)
    records = work / "database_tuning_record.json"
    workloads = work / "database_workload.json"
    if not records.is_file() or not workloads.is_file():
        raise TuneError(
            f"{work} holds no tuning database",
            hint="give the work dir that %mlc_tune printed (TuneResult.work_dir)",
        )
    ms = meta_schedule()
    return ms.database.JSONDatabase(
        path_workload=str(workloads),
        path_tuning_record=str(records),
        module_equality="structural",
        allow_missing=False,
    )


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
