"""A second process that writes tuning records into a work dir, as another notebook's run does:
``python records_support.py WORK N TAG [--go FILE] [--burst K] [--hold S] [--until FILE]
[--no-lock]``
(:func:`writer`).

Once TVM is imported it prints ``ready`` and, given ``--go``, waits for ``FILE`` to exist, so
that two writers start at the same moment. It takes the work dir's lock (unless ``--no-lock``: how every run wrote before work dirs had a
lock), commits ``N`` records of 2 KB each of kernel ``TAG`` (``a`` or ``b``, two different
kernels), ``K`` a second when ``--burst`` is given, then holds the lock ``S`` more seconds, or
until ``FILE`` exists (a test releases it when its own run has started waiting).
Each record's latency encodes its kernel and number, so the test can check where it was filed.
It prints ``locked`` once it holds the lock, then ``done``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

WRITER = Path(__file__).resolve()
REPO = WRITER.parents[1]


def writer(work: Path, n: int, tag: str, *flags: str) -> subprocess.Popen:
    """The writer started on ``work`` (the arguments are the script's); it prints ``locked``
    once it holds the lock, ``done`` when it ends."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(WRITER.parent)])}
    return subprocess.Popen(
        [sys.executable, str(WRITER), str(work), str(n), tag, *flags],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip


def holder(work: Path) -> subprocess.Popen:
    """Another process holding ``work``'s lock (without importing TVM) until its stdin closes;
    returns once it holds it."""
    code = (
        "import sys; from pathlib import Path; from mlc_jupyter.tune.work_lock import hold_work_dir\n"
        "with hold_work_dir(Path(sys.argv[1])):\n"
        "    print('locked', flush=True); sys.stdin.read()\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(work)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    assert proc.stdout.readline().strip() == "locked"
    return proc


def wait_ready(proc: subprocess.Popen) -> None:
    """Return once the writer has imported TVM (and waits for ``--go``, if given)."""
    assert proc.stdout.readline().strip() == "ready", proc.stderr.read()[-2000:]


def wait_locked(proc: subprocess.Popen) -> None:
    """Return once the writer holds the work dir's lock."""
    wait_ready(proc)
    assert proc.stdout.readline().strip() == "locked", proc.stderr.read()[-2000:]


def finish(proc: subprocess.Popen, timeout_s: float = 300) -> None:
    out, err = proc.communicate(timeout=timeout_s)
    assert proc.returncode == 0 and out.split()[-2:] == ["locked", "done"], err[-2000:]


def kernel(tag: str):
    from tvm import te

    n = 16 if tag == "a" else 24
    a = te.placeholder((n,), name="A")
    return te.create_prim_func([a, te.compute((n,), lambda i: a[i] * 2.0, name="B")])


def latency(tag: str, index: int) -> float:
    """``1e-3 + index * 1e-9`` for kernel a, ``2e-3 + ...`` for b."""
    return (1e-3 if tag == "a" else 2e-3) + index * 1e-9


def _wait_for(path: str | None, timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    while path and not Path(path).exists() and time.monotonic() < deadline:
        time.sleep(0.01)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("work")
    parser.add_argument("n", type=int)
    parser.add_argument("tag")
    parser.add_argument("--burst", type=int, default=0)
    parser.add_argument("--hold", type=float, default=0.0)
    parser.add_argument("--go", default=None)
    parser.add_argument("--until", default=None)
    parser.add_argument("--no-lock", action="store_true")
    args = parser.parse_args()
    from mlc_jupyter.tune.records import create_database
    from mlc_jupyter.tune.work_lock import hold_work_dir
    from mlc_jupyter.tvm_compat import Schedule, get_block, ir_module_type, metaschedule, tvm

    ms = metaschedule()
    work = Path(args.work)
    mod = ir_module_type()({"main": kernel(args.tag)})
    sch = Schedule(mod)
    sch.annotate(get_block(sch, "B"), "meta_schedule.tiling_structure", "S" * 2000)
    target = tvm().target.Target("llvm")
    print("ready", flush=True)
    _wait_for(args.go)
    held = contextlib.nullcontext() if args.no_lock else hold_work_dir(work)
    with held:
        print("locked", flush=True)
        if args.no_lock:  # as MetaSchedule's JSONDatabase did: no lock, no repair
            work.mkdir(parents=True, exist_ok=True)
            database = ms.database.JSONDatabase(
                str(work / "database_workload.json"), str(work / "database_tuning_record.json"),
                module_equality="structural", allow_missing=True,
            )  # fmt: skip
        else:
            database = create_database(work)
        workload = database.commit_workload(mod)
        for index in range(args.n):
            database.commit_tuning_record(
                ms.database.TuningRecord(sch.trace, workload, [latency(args.tag, index)], target)
            )
            if args.burst and (index + 1) % args.burst == 0:
                time.sleep(1.0)
        time.sleep(args.hold)
        _wait_for(args.until)
    print("done", flush=True)


if __name__ == "__main__":
    main()
