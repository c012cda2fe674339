"""The two JSON-lines files of a work dir's database, read line by line as MetaSchedule counts
them, without ever stopping at a bad line.

MetaSchedule's ``JSONDatabase`` names a record's workload by its line in the workloads file and
refuses a file with any line that is not whole JSON. A kernel killed mid-append leaves a torn
last line; two runs appending at once (before work dirs had a lock) interleave halves of lines.
:func:`parse` keeps every whole line, skips the others, and renumbers the records of the
workloads it kept; a record whose workload was lost goes with it. Every record's trace is
checked as code from elsewhere (:func:`~mlc_jupyter.compilation.foreign.check_trace`), so a
shared work dir with a payload is refused by file, line and step before anything of it is built.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from ..compilation.foreign import check_trace

WORKLOADS_FILE = "database_workload.json"
RECORDS_FILE = "database_tuning_record.json"


@dataclass(frozen=True)
class Parsed:
    """The whole lines of a database, records renumbered to the workloads kept."""

    workloads: tuple[bytes, ...]
    records: tuple[bytes, ...]
    #: lines skipped: torn, interleaved, or a record of a workload that was skipped
    skipped: int
    #: the files are exactly ``workloads`` and ``records``, each line ending in a newline
    clean: bool


def lines_of(path: Path) -> list[bytes]:
    """Every line of ``path`` as MetaSchedule counts them (a last line without its newline is a
    line too); ``[]`` for a missing file."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    lines = data.split(b"\n")
    return lines[:-1] if lines and not lines[-1] else lines


def _json(line: bytes) -> object:
    try:
        return json.loads(line)
    except ValueError:
        return None


def parse(work: Path) -> Parsed:
    """The database of ``work`` as whole lines (see the module's docstring); raises
    :class:`~mlc_jupyter.errors.ForeignCodeError` for a record that would link native code."""
    workloads_path, records_path = work / WORKLOADS_FILE, work / RECORDS_FILE
    raw_workloads, raw_records = lines_of(workloads_path), lines_of(records_path)
    kept: list[bytes] = []
    renumber: dict[int, int] = {}
    for index, line in enumerate(raw_workloads):
        value = _json(line)
        if isinstance(value, list) and len(value) == 2:
            renumber[index] = len(kept)
            kept.append(line)
    records: list[bytes] = []
    for number, line in enumerate(raw_records, 1):
        value = _json(line)
        if not (isinstance(value, list) and len(value) == 2 and isinstance(value[0], int)):
            continue
        if value[0] not in renumber or not isinstance(value[1], list) or not value[1]:
            continue
        check_trace(value[1][0], f"the record on line {number} of {records_path}")
        if renumber[value[0]] != value[0]:
            line = json.dumps([renumber[value[0]], value[1]], separators=(",", ":")).encode()
        records.append(line)
    skipped = len(raw_workloads) - len(kept) + len(raw_records) - len(records)
    clean = all(
        _whole_file(path, lines)
        for path, lines in ((workloads_path, kept), (records_path, records))
    )
    return Parsed(tuple(kept), tuple(records), skipped, clean)


def _whole_file(path: Path, lines: list[bytes]) -> bool:
    if not path.exists():
        return not lines
    return path.read_bytes() == b"".join(line + b"\n" for line in lines)


def write_lines(path: Path, lines: tuple[bytes, ...]) -> None:
    """Replace ``path`` with ``lines`` in one rename (a reader sees the old file or the new)."""
    spare = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}")
    spare.write_bytes(b"".join(line + b"\n" for line in lines))
    os.replace(spare, path)


def set_aside(
    work: Path, why: str, names: tuple[str, ...] = (WORKLOADS_FILE, RECORDS_FILE)
) -> Path | None:
    """Move (``why="previous"``) or copy (``"damaged"``) the files ``names`` of ``work`` (the
    database's) into ``work/<why>-<time>/``; the folder, or ``None`` when none was there."""
    present = [work / name for name in names if (work / name).exists()]
    if not present:
        return None
    folder = work / f"{why}-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:4]}"
    folder.mkdir()
    for path in present:
        if why == "previous":
            os.replace(path, folder / path.name)
        else:
            (folder / path.name).write_bytes(path.read_bytes())
    return folder
