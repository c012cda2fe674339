"""A work dir's tuning database: open or create it, what it already holds, its best records."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import TuneError
from ..tvm_compat import Schedule, metaschedule, structural_hash
from .tasks import Tasks

WORKLOADS_FILE = "database_workload.json"
RECORDS_FILE = "database_tuning_record.json"
#: A whole model's work dir lists its kernels' work dirs (their databases) here.
KERNEL_DIRS_FILE = "kernel_work_dirs.json"


@dataclass(frozen=True)
class Record:
    """One measured candidate: its trace, the workload it schedules, its mean latency."""

    trace: Any
    workload_mod: Any
    latency_s: float
    run_secs: tuple[float, ...]
    target: Any = None


def _json_database(work: Path, allow_missing: bool) -> Any:
    repair_database(work)
    return metaschedule().database.JSONDatabase(
        path_workload=str(work / WORKLOADS_FILE),
        path_tuning_record=str(work / RECORDS_FILE),
        module_equality="structural",
        allow_missing=allow_missing,
    )


def _whole_lines(path: Path) -> list[bytes]:
    """The lines of ``path`` that are whole JSON, up to the first that is not; a last line that
    lacks its newline counts if it is whole."""
    if not path.exists():
        return []
    kept = []
    for line in path.read_bytes().splitlines():
        if not line.strip():
            continue
        try:
            json.loads(line)
        except ValueError:
            break  # a half-written line: what follows it was appended to a torn file
        kept.append(line)
    return kept


def repair_database(work_dir: Path) -> int:
    """Drop what a killed writer left half-written in a work dir's database; the number of lines
    dropped.

    MetaSchedule appends one JSON line per workload and per record and cannot open a file whose
    last line was cut short: a kernel killed in the middle of an append would leave a database
    that no run resumes from. Every whole line is kept (a record names its workload by line
    number, so records of a dropped workload go too) and each file is replaced in one step.
    """
    workloads_path, records_path = work_dir / WORKLOADS_FILE, work_dir / RECORDS_FILE
    workloads = _whole_lines(workloads_path)
    records = [r for r in _whole_lines(records_path) if _workload_index(r) < len(workloads)]
    dropped = 0
    for path, lines in ((workloads_path, workloads), (records_path, records)):
        if not path.exists():
            continue
        data = b"".join(line + b"\n" for line in lines)
        old = path.read_bytes()
        if data != old:
            dropped += old.count(b"\n") + (not old.endswith(b"\n") and bool(old)) - len(lines)
            spare = path.with_name(f".{path.name}.{os.getpid()}")
            spare.write_bytes(data)
            os.replace(spare, path)
    return dropped


def _workload_index(line: bytes) -> int:
    try:
        return int(json.loads(line)[0])
    except (ValueError, TypeError, IndexError, KeyError):
        return 1 << 62  # not a record: dropped


def create_database(work_dir: Path, fresh: bool = False) -> Any:
    """The database of ``work_dir``, created (with its ``logs`` folder) if missing.

    ``fresh=True`` deletes whatever the work dir held first.
    """
    if fresh and work_dir.exists():
        shutil.rmtree(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    (work_dir / "logs").mkdir(exist_ok=True)
    return _json_database(work_dir, allow_missing=True)


def commit_schedule(
    work: Path, workload: Any, trace: Any, seconds: float | None, target: Any
) -> None:
    """Keep ``trace`` of ``workload`` in the database of ``work`` as a record measured at
    ``seconds`` (a schedule not found by a search there: a default, a replay), so a later
    search starts from it and a model built with these records uses it."""
    ms = metaschedule()
    database = create_database(work)
    top = database.get_top_k(database.commit_workload(workload), 1)
    if top and str(top[0].trace) == str(trace):
        return  # a rerun replays the same decisions: one record of them is enough
    database.commit_tuning_record(
        ms.database.TuningRecord(
            trace=trace,
            workload=database.commit_workload(workload),
            run_secs=[seconds] if seconds is not None else None,
            target=target,
            args_info=ms.arg_info.ArgInfo.from_prim_func(workload["main"]),
        )
    )


def open_database(work_dir: str | Path) -> Any:
    """The JSON database of a tuning work dir (refuses a folder without one)."""
    work = Path(work_dir)
    if not (work / RECORDS_FILE).is_file() or not (work / WORKLOADS_FILE).is_file():
        raise TuneError(
            f"{work} holds no tuning database",
            hint="give the work dir that %mlc_tune printed (TuneResult.work_dir)",
        )
    return _json_database(work, allow_missing=False)


def write_kernel_dirs(work_dir: Path, dirs: dict[str, str]) -> None:
    """Note in a whole model's work dir where each of its kernels keeps its database."""
    work_dir.mkdir(parents=True, exist_ok=True)
    (work_dir / KERNEL_DIRS_FILE).write_text(json.dumps(dirs, indent=1))


def database_dirs(work_dir: str | Path) -> list[Path]:
    """The work dirs whose databases ``work_dir`` stands for: itself when it holds one, else
    (a whole model's) the kernel work dirs it lists."""
    work = Path(work_dir)
    if (work / RECORDS_FILE).is_file() or not (work / KERNEL_DIRS_FILE).is_file():
        return [work]
    try:
        listed = json.loads((work / KERNEL_DIRS_FILE).read_text())
    except (OSError, ValueError):
        return [work]
    return list(
        dict.fromkeys(Path(d) for d in listed.values() if (Path(d) / RECORDS_FILE).is_file())
    )


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
