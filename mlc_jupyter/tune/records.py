"""A work dir's tuning database: the writer's (under the work dir's lock), a reader's (a private
copy), what it already holds, its best records."""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import TuneError
from ..tvm_compat import Schedule, metaschedule, structural_hash
from .database_files import (
    RECORDS_FILE,
    WORKLOADS_FILE,
    Parsed,
    parse,
    set_aside,
    write_lines,
)
from .tasks import Tasks
from .work_lock import held

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


def _json_database(workloads: Path, records: Path, allow_missing: bool) -> Any:
    return metaschedule().database.JSONDatabase(
        path_workload=str(workloads),
        path_tuning_record=str(records),
        module_equality="structural",
        allow_missing=allow_missing,
    )


def repair_database(work_dir: Path) -> int:
    """Rewrite a work dir's database without its torn or interleaved lines (a record names its
    workload by line, so records are renumbered and a lost workload's records go too); the
    number of lines dropped.

    Only the run that holds the work dir's lock (:mod:`.work_lock`) repairs: a reader that
    repairs is a writer without a lock. The files are copied into ``damaged-<time>/`` first.
    """
    _require_lock(work_dir)
    parsed = parse(work_dir)
    if parsed.clean:
        return 0
    set_aside(work_dir, "damaged")
    write_lines(work_dir / WORKLOADS_FILE, parsed.workloads)
    write_lines(work_dir / RECORDS_FILE, parsed.records)
    return parsed.skipped


def _require_lock(work_dir: Path) -> None:
    if not held(work_dir):
        raise RuntimeError(f"{work_dir}: only the run holding the work dir's lock writes to it")


def create_database(work_dir: Path, fresh: bool = False) -> Any:
    """The database a tuning run writes to, in ``work_dir`` (created with its ``logs`` folder if
    missing), repaired first when a line is torn. The caller holds the work dir's lock
    (:func:`.work_lock.hold_work_dir`) for as long as it uses the database.

    ``fresh=True`` moves the database it held into ``previous-<time>/`` first.
    """
    _require_lock(work_dir)
    if fresh:
        set_aside(work_dir, "previous")
    (work_dir / "logs").mkdir(parents=True, exist_ok=True)
    repair_database(work_dir)
    return _json_database(work_dir / WORKLOADS_FILE, work_dir / RECORDS_FILE, allow_missing=True)


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


#: Databases opened to read: work dir -> (its files' inodes, sizes and times, the database).
_READ: dict[str, tuple[tuple[Any, ...], Any]] = {}


def _stamp(work: Path) -> tuple[tuple[int, int, int], ...]:
    """Each database file's inode, size and time (a rewrite changes the inode, an append the
    size); a file gone (moved aside by ``--fresh``) is a work dir without a database."""
    try:
        stats = [(work / n).stat() for n in (WORKLOADS_FILE, RECORDS_FILE)]
    except FileNotFoundError:
        raise _no_database(work) from None
    return tuple((s.st_ino, s.st_size, s.st_mtime_ns) for s in stats)


def _no_database(work: Path) -> TuneError:
    return TuneError(
        f"{work} holds no tuning database",
        hint="give the work dir that %mlc_tune printed (TuneResult.work_dir)",
    )


def _parsed_whole(work: Path) -> tuple[tuple[tuple[int, int, int], ...], Parsed]:
    """The database parsed from one version of each file: a record names its workload by line,
    so records read across a repair (both files replaced, renumbered) would be filed under the
    wrong workload; parsed again when a file was replaced meanwhile (appends are harmless: a
    record of a workload not yet read is skipped)."""
    while True:
        before = _stamp(work)
        parsed = parse(work)
        after = _stamp(work)
        if [s[0] for s in before] == [s[0] for s in after]:
            return before, parsed  # appended to since: the next read reads again


def read_database(work_dir: str | Path) -> Any:
    """A work dir's database to read, never written: its whole lines (torn or interleaved ones
    skipped, as :func:`.database_files.parse` reads them), loaded from a private copy that is
    removed once MetaSchedule has read it, so a tuning run appending meanwhile loses nothing and
    a commit through the returned database fails instead of writing without the lock. Opened
    again only when the files changed."""
    work = Path(work_dir)
    if not (work / RECORDS_FILE).is_file() or not (work / WORKLOADS_FILE).is_file():
        raise _no_database(work)
    key = str(work.resolve())
    cached = _READ.get(key)
    if cached is not None and cached[0] == _stamp(work):
        return cached[1]
    stamp, parsed = _parsed_whole(work)
    copy = Path(tempfile.mkdtemp(prefix="mlc-jupyter-read-"))
    try:
        write_lines(copy / WORKLOADS_FILE, parsed.workloads)
        write_lines(copy / RECORDS_FILE, parsed.records)
        database = _json_database(copy / WORKLOADS_FILE, copy / RECORDS_FILE, allow_missing=False)
    finally:
        shutil.rmtree(copy, ignore_errors=True)
    _READ[key] = (stamp, database)
    return database


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
    database = read_database(work_dir)
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
