"""Bench: a default build while another process keeps one core busy, TVM's workers pinned to a
core each (``TVM_BIND_THREADS=1``, TVM's default) or floating (``0``, the workbench's default).

A notebook's machine runs other work: a second notebook, a tune, a browser. A TVM pool worker
pinned to the core such a process uses shares it, and each parallel kernel of a model waits for
the worker's turn on it. Binding is fixed when TVM makes a pool, so each setting runs in its own
process, the two taking turns (``--pairs`` times), each timing the model as the race does
(``tvm_contender``: TVM's evaluator over calibrated calls, median of 7 samples). The busy process
is ``yes`` pinned to the last core; ``--quiet`` times the same without it.

    .venv/bin/python bench/bench_busy_core.py                     # MobileNet v1, 3 pairs, busy
    .venv/bin/python bench/bench_busy_core.py --model resnet18 --quiet
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

ONE_RUN = """
import statistics, sys
sys.path.insert(0, {bench!r})
from bench_models import build_model
from mlc_jupyter.compilation import build_module
from mlc_jupyter.measure.race import tvm_contender
from mlc_jupyter.models import import_model
model, x = build_model({model!r})
sampler, _ = tvm_contender(build_module(import_model(model, x)), None, [x.numpy()], "tvm").calibrate(0.1)
print("MS", statistics.median(sampler() * 1e3 for _ in range(7)))
"""


def one_run(model: str, bind: str) -> float:
    """The model's median milliseconds per call in a fresh process with ``TVM_BIND_THREADS``."""
    env = {**os.environ, "TVM_BIND_THREADS": bind, "PYTHONPATH": str(ROOT)}
    script = ONE_RUN.format(bench=str(ROOT / "bench"), model=model)
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env
    ).stdout
    return float(out.split("MS", 1)[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model", default="mobilenet", choices=("resnet18", "mobilenet", "encoder")
    )
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--quiet", action="store_true", help="no busy process")
    args = parser.parse_args()
    cores = sorted(os.sched_getaffinity(0))
    busy = None
    if not args.quiet:
        busy = subprocess.Popen(["taskset", "-c", str(cores[-1]), "yes"], stdout=subprocess.DEVNULL)
        time.sleep(1.0)
    print(f"{args.model}, {len(cores)} cores, load {os.getloadavg()[0]:.2f}, "
          f"{'core ' + str(cores[-1]) + ' kept busy by yes' if busy else 'no busy process'}")  # fmt: skip
    runs: dict[str, list[float]] = {"1": [], "0": []}
    try:
        for _ in range(args.pairs):
            for bind, taken in runs.items():
                taken.append(one_run(args.model, bind))
                print(f"  TVM_BIND_THREADS={bind}: {taken[-1]:.1f} ms", flush=True)
    finally:
        if busy is not None:
            busy.kill()
    pinned, floating = (statistics.median(runs[b]) for b in ("1", "0"))
    print(f"median of the runs: pinned {pinned:.1f} ms, floating {floating:.1f} ms "
          f"({pinned / floating:.2f}x)")  # fmt: skip


if __name__ == "__main__":
    main()
