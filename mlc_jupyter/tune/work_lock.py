"""One tuning run per work dir: a lock held for the run's whole life, as SQLite has one writer.

MetaSchedule appends to a work dir's database without a lock, and a line of 1 KiB or more takes
two writes, so two runs appending at once interleave their lines; each also numbers workloads
from its own memory and files records under the other's kernels. A run therefore takes an
exclusive ``fcntl.flock`` on ``<work dir>/.lock`` before it opens the database and keeps it until
it ends (the kernel dying releases it). A second run on the same dir waits and says so
("waiting for the tuning run of pid 4242, started 12:03"), or fails at once when asked to.
Readers (:func:`.records.read_database`) take no lock: they never write.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from ..errors import TuneError
from .report import TuneProgress

LOCK_FILE = ".lock"
#: How often a waiting run tries the lock again.
POLL_S = 0.25

#: The work dirs this process holds: resolved path -> (descriptor, holds), so a whole model's
#: run and the kernel tune inside it share one lock.
_held: dict[str, list[int]] = {}
_guard = threading.Lock()


def holder(work: Path) -> str:
    """Who holds ``work``'s lock, as the lock file says: ``the tuning run of pid N, started
    12:03`` (``another tuning run`` when it does not say)."""
    try:
        pid, started = (work / LOCK_FILE).read_text().split()[:2]
        when = time.strftime("%H:%M", time.localtime(float(started)))
        return f"the tuning run of pid {int(pid)}, started {when}"
    except (OSError, ValueError):
        return "another tuning run"


def in_use(work: Path) -> str | None:
    """Who holds ``work`` now (this process or another), ``None`` when nobody does."""
    if str(work.resolve()) in _held:
        return f"the tuning run of pid {os.getpid()} (this kernel)"
    if not (work / LOCK_FILE).exists():
        return None
    fd = os.open(work / LOCK_FILE, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return holder(work)
    finally:
        os.close(fd)
    return None


@contextlib.contextmanager
def hold_work_dir(
    work: Path, *, wait: bool = True, on_wait: Callable[[str], None] | None = None
) -> Iterator[None]:
    """Hold ``work``'s lock while the block runs (made with the folder when missing).

    Another process holding it: with ``wait`` the block waits for it, telling ``on_wait`` once
    (``"waiting for the tuning run of pid N, started 12:03"``); without, a :class:`TuneError`
    says who holds it. Nested holds in this process share the lock.
    """
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True, mode=0o700)
    key = str(work.resolve())
    with _guard:
        if key in _held:
            _held[key][1] += 1
            fd = None
        else:
            fd = os.open(work / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    if fd is None:
        try:
            yield
        finally:
            with _guard:
                _held[key][1] -= 1
        return
    try:
        _acquire(fd, work, wait, on_wait)
    except BaseException:
        os.close(fd)
        raise
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()} {time.time():.0f}\n".encode(), 0)
    with _guard:
        _held[key] = [fd, 1]
    try:
        yield
    finally:
        with _guard:
            _held[key][1] -= 1
            done = _held[key][1] == 0
            if done:
                del _held[key]
        if done:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


def _acquire(fd: int, work: Path, wait: bool, on_wait: Callable[[str], None] | None) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return
    except BlockingIOError:
        pass
    who = holder(work)
    if not wait:
        raise TuneError(
            f"{work} is in use by {who}",
            hint="wait for it (leave out --no-wait), or tune into another --work-dir",
        )
    if on_wait is not None:
        on_wait(f"waiting for {who}")
    while True:  # polled, so Ctrl-C ends the wait
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            time.sleep(POLL_S)


def waiting_progress(
    on_progress: Callable[[TuneProgress], None] | None, work: Path
) -> Callable[[str], None]:
    """What tells a run's progress that it waits for the work dir another run holds."""

    def say(message: str) -> None:
        if on_progress is not None:
            on_progress(
                TuneProgress(
                    task=work.name, trials_done=0, trials_total=None, best_latency_s=None,
                    best_gflops=None, elapsed_s=0.0, eta_s=None, work_dir=str(work),
                    waiting=message,
                )
            )  # fmt: skip

    return say


def held(work: Path) -> bool:
    """True when this process holds ``work``'s lock."""
    return str(Path(work).resolve()) in _held
