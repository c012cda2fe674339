"""Bench: raw ``ms.tune_tir`` against ``mlc_jupyter.tune`` at equal trials, fp32 matmul.

Prints, per size: trials per minute of each and the ratio, time to first measurement, the best
latency and GFLOP/s of each, and NumPy's on the same matmul. Cold start (a fresh Python process,
``import tvm`` included) is measured in subprocesses.

    .venv/bin/python bench/bench_tune.py --sizes 128 512 1024 --trials 64
    .venv/bin/python bench/bench_tune.py --sizes 1024 --trials 256 --no-raw   # the long run
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time

import numpy as np


def matmul(n: int):
    from tvm import te

    a = te.placeholder((n, n), name="A")
    b = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    c = te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    return te.create_prim_func([a, b, c])


def numpy_seconds(n: int) -> float:
    rng = np.random.default_rng(0)
    a = rng.random((n, n), dtype="float32")
    b = rng.random((n, n), dtype="float32")
    a @ b
    runs = max(3, min(200, int(0.5 / max(2 * n**3 / 50e9, 1e-6))))
    times = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(runs):
            a @ b
        times.append((time.perf_counter() - start) / runs)
    return float(np.median(times))


def run_driver(n: int, trials: int, per_iter: int, seed: int) -> dict:
    from mlc_jupyter.tune import tune

    start = time.perf_counter()
    first: list[float] = []

    def on_progress(event) -> None:
        if not first and event.best_latency_s is not None:
            first.append(time.perf_counter())

    work = tempfile.mkdtemp(prefix="bench-driver-")
    result = tune(matmul(n), trials=trials, per_iter=per_iter, work_dir=work, seed=seed,
                  on_progress=on_progress)  # fmt: skip
    return {
        "tune_s": result.elapsed_s,
        "first_s": first[0] - start if first else None,
        "first_abs": first[0] if first else None,
        "best_s": result.best_latency_s,
        "trials": result.n_records,
        "errors": result.build_errors + result.run_errors,
    }


def run_raw(n: int, trials: int, per_iter: int, seed: int) -> dict:
    from tvm.ir.utils import derived_object

    from mlc_jupyter.tune.options import tuning_target
    from mlc_jupyter.tune.timing import time_tir
    from mlc_jupyter.tvm_compat import meta_schedule

    ms = meta_schedule()
    target = tuning_target(None)
    first: list[float] = []
    start = time.perf_counter()

    @derived_object
    class FirstResult(ms.measure_callback.PyMeasureCallback):
        def apply(self, *args) -> None:
            if not first:
                first.append(time.perf_counter())

    work = tempfile.mkdtemp(prefix="bench-raw-")
    func = matmul(n)
    database = ms.tune_tir(
        func, target, work, trials, num_trials_per_iter=per_iter, seed=seed,
        measure_callbacks=[*ms.measure_callback.MeasureCallback.create("default"), FirstResult()],
    )  # fmt: skip
    tune_s = time.perf_counter() - start
    sch = ms.tir_integration.compile_tir(database, func, target)
    best = time_tir(sch.mod, target) if sch is not None else None
    records = len(database.get_all_tuning_records())
    return {"tune_s": tune_s, "first_s": first[0] - start if first else None,
            "first_abs": first[0] if first else None, "best_s": best,
            "trials": records, "errors": None}  # fmt: skip


def cold_probe(kind: str) -> float | None:
    """Seconds from a fresh process's start to its first measured candidate (128^3, 8 trials)."""
    code = (
        "import time; t0 = time.perf_counter(); import sys; sys.path.insert(0, 'bench');"
        "import bench_tune as b;"
        f"r = b.run_{kind}(128, 8, 8, 0);"
        "print('FIRST', r['first_abs'] - t0)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    for line in out.stdout.splitlines():
        if line.startswith("FIRST"):
            return float(line.split()[1])
    print(out.stderr[-2000:], file=sys.stderr)
    return None


def fmt(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return f"{seconds * 1e6:.1f} us" if seconds < 1e-3 else f"{seconds * 1e3:.3f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[128, 512, 1024])
    parser.add_argument("--trials", type=int, default=64)
    parser.add_argument("--per-iter", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-raw", action="store_true", help="skip raw tune_tir")
    parser.add_argument("--no-cold", action="store_true", help="skip the cold-start probes")
    args = parser.parse_args()

    import os

    print(f"machine: {os.cpu_count()} cores; trials {args.trials}, per round {args.per_iter}")
    if not args.no_cold:
        print(f"cold start to first measurement (fresh process, 128^3): "
              f"driver {cold_probe('driver'):.1f} s", flush=True)  # fmt: skip
        if not args.no_raw:
            print(f"cold start to first measurement (fresh process, 128^3): "
                  f"raw tune_tir {cold_probe('raw'):.1f} s", flush=True)  # fmt: skip
    for n in args.sizes:
        flop = 2 * n**3
        ref = numpy_seconds(n)
        mine = run_driver(n, args.trials, args.per_iter, args.seed)
        raw = None if args.no_raw else run_raw(n, args.trials, args.per_iter, args.seed)
        print(f"\n== {n}^3 fp32 matmul, {args.trials} trials ==")
        print(f"numpy          {fmt(ref):>12}  {flop / ref / 1e9:7.1f} GFLOP/s")
        rows = [("mlc driver", mine)] + ([("raw tune_tir", raw)] if raw else [])
        for name, r in rows:
            rate = r["trials"] / r["tune_s"] * 60
            gf = flop / r["best_s"] / 1e9 if r["best_s"] else 0.0
            vs = ref / r["best_s"] if r["best_s"] else 0.0
            print(f"{name:<14} {fmt(r['best_s']):>12}  {gf:7.1f} GFLOP/s  {vs:5.2f}x numpy  "
                  f"{rate:6.1f} trials/min  first measurement {r['first_s']:.1f} s  "
                  f"tune {r['tune_s']:.0f} s", flush=True)  # fmt: skip
        if raw:
            ratio = (mine["trials"] / mine["tune_s"]) / (raw["trials"] / raw["tune_s"])
            print(f"trials/min ratio driver/raw: {ratio:.1f}x", flush=True)


if __name__ == "__main__":
    main()
