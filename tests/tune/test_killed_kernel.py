"""Tuning survives the kernel's death: ``kill -9`` mid-``%mlc_tune`` keeps every finished record,
and the next run resumes from them."""

from __future__ import annotations

import os
import signal
import time

import pytest
from build_support import matmul
from kernel_support import Kernel

from mlc_jupyter.tune.records import RECORDS_FILE, WORKLOADS_FILE, create_database, repair_database
from mlc_jupyter.tune.work_lock import hold_work_dir

SETUP = """
%load_ext mlc_jupyter
from tvm import te
a = te.placeholder((64, 64), name="A")
b = te.placeholder((64, 64), name="B")
k = te.reduce_axis((0, 64), name="k")
c = te.compute((64, 64), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
mm = te.create_prim_func([a, b, c])
"""


def whole_lines(path) -> int:
    data = path.read_bytes() if path.exists() else b""
    return data.count(b"\n")


def wait_for(condition, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout_s} s for {what}")
        time.sleep(0.2)


@pytest.mark.slow
def test_a_kernel_killed_mid_tune_loses_no_record_and_the_next_run_resumes(tmp_path):
    from mlc_jupyter.tune import tune

    work = tmp_path / "work"
    records = work / RECORDS_FILE
    kernel = Kernel(tmp_path / "cache")
    try:
        assert kernel.run(SETUP)[1] is None
        kernel.start_run(f"%mlc_tune mm --trials 256 --per-iter 8 --work-dir {work}")
        wait_for(lambda: whole_lines(records) >= 10, 300, "two rounds of records")
        before = whole_lines(records)
        pid = kernel.pid
        os.kill(pid, signal.SIGKILL)
        wait_for(lambda: not _alive(pid), 30, "the kernel to die")
    finally:
        kernel.shutdown()
    after = whole_lines(records)
    assert after >= before  # every record written before the kill is there
    with hold_work_dir(work):  # the kernel's death released its lock
        assert repair_database(work) <= 1  # at most the line being written when it died
        kept = len(create_database(work).get_all_tuning_records())
    assert kept >= before
    assert whole_lines(work / WORKLOADS_FILE) == 1
    resumed = tune(matmul(64), trials=kept + 2, per_iter=8, work_dir=work)
    assert resumed.resumed_from == kept
    assert resumed.n_records == kept + resumed.trials_new >= kept + 1
    assert resumed.best_latency_s is not None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a killed child stays a zombie until its parent reaps it: count that as dead
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().split(") ")[-1][:1] != "Z"


def _database_with(work, n_records: int):
    """A real MetaSchedule JSON database in ``work`` with ``n_records`` records of a matmul."""
    from mlc_jupyter.tvm_compat import Schedule, ir_module_type, metaschedule

    ms = metaschedule()
    with hold_work_dir(work):
        database = create_database(work)
        mod = ir_module_type()({"main": matmul(16)})
        workload = database.commit_workload(mod)
        for i in range(n_records):
            trace = Schedule(mod).trace
            database.commit_tuning_record(
                ms.database.TuningRecord(trace, workload, run_secs=[1e-5 * (i + 1)])
            )


def test_a_record_cut_short_by_a_kill_is_dropped_and_the_database_opens(tmp_path):
    _database_with(tmp_path, 3)
    path = tmp_path / RECORDS_FILE
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:2]) + lines[2][: len(lines[2]) // 2])  # killed mid-write
    with hold_work_dir(tmp_path):
        assert repair_database(tmp_path) == 1
        assert path.read_bytes() == b"".join(lines[:2])
        assert len(create_database(tmp_path).get_all_tuning_records()) == 2
        assert repair_database(tmp_path) == 0  # a whole database is left alone


def test_a_workload_cut_short_takes_no_whole_record_with_it_but_its_own(tmp_path):
    _database_with(tmp_path, 2)
    workloads = tmp_path / WORKLOADS_FILE
    workloads.write_bytes(workloads.read_bytes()[:-50])  # cut short, newline and all
    with hold_work_dir(tmp_path):
        repair_database(tmp_path)
        assert whole_lines(workloads) == 0 and whole_lines(tmp_path / RECORDS_FILE) == 0
        assert len(create_database(tmp_path).get_all_tuning_records()) == 0
