"""A work dir's database under concurrent use: two runs committing at once keep every record,
filed under its own kernel; a reader looping over ``top_records`` while a run appends loses
none and never writes; torn and interleaved lines are skipped, never "stop at the first bad
line", and repaired only under the lock, the file copied aside first."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from records_support import finish, latency, writer

from mlc_jupyter.tune.database_files import RECORDS_FILE, WORKLOADS_FILE, lines_of
from mlc_jupyter.tune.records import create_database, read_database, repair_database, top_records
from mlc_jupyter.tune.work_lock import hold_work_dir


def filed(work: Path) -> dict[str, int]:
    """How many records of each kernel the database holds, each checked to be filed under the
    kernel its latency says it measured."""
    from records_support import kernel

    from mlc_jupyter.tvm_compat import structural_equal

    counts = {"a": 0, "b": 0}
    for record in read_database(work).get_all_tuning_records():
        tag = "a" if float(record.run_secs[0]) < 1.5e-3 else "b"
        assert structural_equal(record.workload.mod["main"], kernel(tag)), "filed under the other"
        counts[tag] += 1
    return counts


@pytest.mark.slow
def test_two_runs_committing_into_one_work_dir_at_once_keep_every_record_under_its_kernel(
    tmp_path,
):
    work = tmp_path / "work"
    first, second = writer(work, 500, "a"), writer(work, 500, "b")
    finish(first)
    finish(second)
    assert filed(work) == {"a": 500, "b": 500}
    assert len(lines_of(work / RECORDS_FILE)) == 1000 and len(lines_of(work / WORKLOADS_FILE)) == 2


@pytest.mark.slow
def test_a_reader_looping_over_top_records_while_a_run_appends_loses_none(tmp_path):
    work = tmp_path / "work"
    proc = writer(work, 256, "a", "--burst", "64")
    deadline = time.monotonic() + 120
    while not (work / RECORDS_FILE).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    seen = []
    while proc.poll() is None and time.monotonic() < deadline:
        seen.append(len(top_records(work, 10**6)))
        assert seen == sorted(seen), "a reader lost records it had seen"
        time.sleep(0.1)
    finish(proc)
    assert len(seen) > 5 and seen[-1] <= 256
    latencies = sorted(r.latency_s for r in top_records(work, 10**6))
    assert latencies == [latency("a", i) for i in range(256)]
    assert len(lines_of(work / RECORDS_FILE)) == 256


def test_torn_and_interleaved_lines_are_skipped_in_memory_and_repaired_only_under_the_lock(
    tmp_path,
):
    work = tmp_path / "work"
    finish(writer(work, 6, "a"))
    path = work / RECORDS_FILE
    lines = path.read_bytes().split(b"\n")[:-1]
    # an interleaved pair in the middle (half of line 3 joined to line 4), a torn last line
    damaged = [*lines[:2], lines[2][:700] + lines[3], *lines[4:5], lines[5][:900]]
    path.write_bytes(b"\n".join(damaged))
    before = path.read_bytes()
    kept = sorted(r.latency_s for r in top_records(work, 100))
    assert kept == [latency("a", i) for i in (0, 1, 4)], "stopped at the first bad line"
    assert path.read_bytes() == before, "a reader rewrote the database"
    with pytest.raises(RuntimeError, match="only the run holding the work dir's lock"):
        repair_database(work)
    with hold_work_dir(work):
        assert repair_database(work) == 2  # the joined line and the torn one
        database = create_database(work)
    (aside,) = work.glob("damaged-*")
    assert (aside / RECORDS_FILE).read_bytes() == before
    assert len(database.get_all_tuning_records()) == 3
    assert lines_of(path) == [lines[0], lines[1], lines[4]]
