"""One tuning run per work dir: a second waits and says for whom (failing at once when asked:
``tests/magics/test_tune_magic.py``); ``--fresh`` waits for the lock too and keeps the old
database as a copy; a dead kernel's lock is free."""

from __future__ import annotations

import os
import time

import pytest
from records_support import wait_locked, writer

from mlc_jupyter.tune.database_files import RECORDS_FILE, lines_of
from mlc_jupyter.tune.work_lock import hold_work_dir, in_use


@pytest.mark.slow
def test_a_second_run_waits_for_the_first_and_says_whose_run_it_waits_for(tmp_path):
    work = tmp_path / "work"
    minutes = {time.strftime("%H:%M")}
    proc = writer(work, 10, "a", "--hold", "3")
    wait_locked(proc)
    minutes.add(time.strftime("%H:%M"))  # the writer started in one of them
    heard = []
    begin = time.monotonic()
    with hold_work_dir(work, on_wait=heard.append):
        waited = time.monotonic() - begin
        assert in_use(work).endswith("(this kernel)")
    assert heard in [
        [f"waiting for the tuning run of pid {proc.pid}, started {m}"] for m in minutes
    ]
    assert waited > 1.0
    proc.stdout.readline()
    proc.wait(60)
    assert in_use(work) is None


@pytest.mark.slow
def test_fresh_waits_for_the_run_writing_and_keeps_its_database_as_a_copy(tmp_path):
    from build_support import matmul

    from mlc_jupyter.tune import tune

    work = tmp_path / "work"
    release = tmp_path / "release"
    proc = writer(work, 300, "a", "--until", str(release))
    wait_locked(proc)
    events = []

    def heard(event) -> None:
        events.append(event)
        if event.waiting:
            release.touch()  # the other run may end now: this one waits for it

    result = tune(matmul(16), trials=4, per_iter=4, work_dir=work, fresh=True, on_progress=heard)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and out.split() == ["done"], err[-2000:]
    assert events[0].waiting.startswith(f"waiting for the tuning run of pid {proc.pid}, started")
    assert not any(e.waiting for e in events[1:])
    (previous,) = work.glob("previous-*")
    assert len(lines_of(previous / RECORDS_FILE)) == 300, "the other run's records were lost"
    assert len(lines_of(work / RECORDS_FILE)) == result.n_records == 4  # its own records only


def test_a_lock_held_by_a_kernel_that_died_is_free(tmp_path):
    work = tmp_path / "work"
    proc = writer(work, 1, "a", "--hold", "60")
    wait_locked(proc)
    proc.kill()
    proc.wait(60)
    with hold_work_dir(work, wait=False):
        assert in_use(work) is not None
    assert os.path.exists(work / ".lock")
