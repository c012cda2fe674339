"""A work dir's database under concurrent use, and what its safety costs.

1. Two processes commit ``--records`` records each (2 KB lines, two different kernels) into one
   work dir at once: without the work dir's lock (how every run wrote before it had one, straight
   through MetaSchedule's ``JSONDatabase``) and with it. Prints the records kept, how many are
   filed under their own kernel, and the wall time (the lock makes the second writer wait).
2. A reader calls ``top_records`` every 0.5 s while a run appends bursts of 64 records a second:
   the records the reader saw last, the records in the file at the end (nothing lost when they
   are all there and the reader never saw fewer than before).
3. The cost: opening a 1,000-record database to read (``read_database``: every line parsed and
   checked, a private copy loaded) against MetaSchedule's ``JSONDatabase`` on the files, and
   taking and releasing the lock.

Usage: ``python bench/bench_records.py [--records 500] [--reader-records 960] [--runs 5]``.
The writers are ``tests/records_support.py``, the process the tests start.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from records_support import finish, kernel, wait_ready, writer


def filed(work: Path) -> tuple[int, int]:
    """(records readable, records filed under the kernel their latency says they measured)."""
    from mlc_jupyter.tune.records import read_database
    from mlc_jupyter.tvm_compat import structural_equal

    records = read_database(work).get_all_tuning_records()
    right = 0
    for record in records:
        tag = "a" if float(record.run_secs[0]) < 1.5e-3 else "b"
        right += bool(structural_equal(record.workload.mod["main"], kernel(tag)))
    return len(records), right


def two_writers(root: Path, n: int, lock: bool) -> None:
    work, go = root / f"two-{lock}", root / f"go-{lock}"
    flags = ("--go", str(go)) if lock else ("--go", str(go), "--no-lock")
    procs = [writer(work, n, tag, *flags) for tag in ("a", "b")]
    for proc in procs:
        wait_ready(proc)
    began = time.perf_counter()
    go.touch()
    for proc in procs:
        finish(proc)
    wall = time.perf_counter() - began
    kept, right = filed(work)
    print(
        f"two writers x {n}, {'with' if lock else 'without'} the lock: {kept} of {2 * n} kept, "
        f"{right} under their own kernel, {wall:.1f} s"
    )


def reader_during_appends(root: Path, n: int) -> None:
    from mlc_jupyter.tune.database_files import RECORDS_FILE, lines_of
    from mlc_jupyter.tune.records import top_records

    work = root / "read"
    proc = writer(work, n, "a", "--burst", "64")
    while not (work / RECORDS_FILE).exists():
        time.sleep(0.05)
    seen = []
    while proc.poll() is None:
        seen.append(len(top_records(work, 10**6)))
        time.sleep(0.5)
    finish(proc)
    seen.append(len(top_records(work, 10**6)))
    dropped = sum(max(0, a - b) for a, b in itertools.pairwise(seen))
    print(
        f"reader opening every 0.5 s ({len(seen)} opens) while a run appends {n} in bursts of "
        f"64/s: the file holds {len(lines_of(work / RECORDS_FILE))}, the reader sees {seen[-1]}, "
        f"records it lost between opens: {dropped}"
    )


def costs(root: Path, runs: int) -> None:
    from mlc_jupyter.tune import records
    from mlc_jupyter.tune.work_lock import hold_work_dir
    from mlc_jupyter.tvm_compat import metaschedule

    work = root / "cost"
    finish(writer(work, 1000, "a"))

    def median_ms(fn) -> float:
        times = []
        for _ in range(runs):
            began = time.perf_counter()
            fn()
            times.append(time.perf_counter() - began)
        return statistics.median(times) * 1e3

    def read() -> None:
        records._READ.clear()
        records.read_database(work)

    def bare() -> None:
        metaschedule().database.JSONDatabase(
            str(work / records.WORKLOADS_FILE), str(work / records.RECORDS_FILE),
            module_equality="structural", allow_missing=False,
        )  # fmt: skip

    def lock() -> None:
        with hold_work_dir(work):
            pass

    read_ms, bare_ms, lock_ms = median_ms(read), median_ms(bare), median_ms(lock)
    print(
        f"open 1000 records to read: read_database {read_ms:.0f} ms, JSONDatabase on the files "
        f"{bare_ms:.0f} ms ({read_ms / bare_ms:.2f}x); take and release the lock {lock_ms:.2f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=500, help="records per writer")
    parser.add_argument("--reader-records", type=int, default=960, help="records appended")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per cost")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        two_writers(root, args.records, lock=False)
        two_writers(root, args.records, lock=True)
        reader_during_appends(root, args.reader_records)
        costs(root, args.runs)


if __name__ == "__main__":
    main()
