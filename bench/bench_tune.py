"""Bench: raw ``ms.tune_tir`` against ``mlc_jupyter.tune`` at equal trials, fp32 matmul.

Prints, per size: trials per minute of each and the ratio, time to first measurement (warm:
this process has tuned before), and the best kernel of each next to NumPy's ``a @ b`` on the same
matmul and as a share of the machine's fp32 peak (independent 512-bit FMA chains on every core,
compiled with gcc). Those last figures are timed *in turns* after both tunes (one sample of the
peak program, NumPy and each best kernel per round, median of 7 rounds), because this virtual
machine's speed drifts (its 2-core peak swings between ~320 and ~480 GFLOP/s) and figures taken
minutes apart would compare the host's mood, not the kernels. At 64 trials (one round) the
result is mostly the luck of the first sample (the cost model predicts at random below 100
samples), so 128^3 and 512^3 run three seeds each and the quality ratio is given per seed and
as their median, and each run's selection (its returned kernel against the fastest of its own
candidates, in turns) shows what the tuner's measuring decides. Cold start (a fresh Python
process, ``import tvm`` included, 128^3) is measured in subprocesses. Both tuners get the same
target, seed, trials and round size. ``TVM_NUM_THREADS`` is set to the core count so that raw
``tune_tir``'s runner processes also time candidates on every core (TVM's own default on x86 is
half the logical CPUs: one thread here).

    .venv/bin/python bench/bench_tune.py          # 1024 at 256 (seed 0); 128, 512 at 64 (seeds 0-2)
    .venv/bin/python bench/bench_tune.py --sizes 128:32 --no-cold
    .venv/bin/python bench/bench_tune.py --sizes 1024:256 --no-raw
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

os.environ.setdefault("TVM_NUM_THREADS", str(os.cpu_count() or 1))


def matmul(n: int):
    from tvm import te

    a = te.placeholder((n, n), name="A")
    b = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    c = te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    return te.create_prim_func([a, b, c])


#: Independent 512-bit FMA chains on every core: the machine's fp32 peak, as the hardware runs it.
PEAK_C = r"""
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
typedef float v16 __attribute__((vector_size(64)));
#define ACC 16
int main(int argc, char **argv) {
  long iters = (argc > 1 ? atol(argv[1]) : 200000000L) / ACC;
  int reps = argc > 2 ? atoi(argv[2]) : 3;
  double best = 0; float sink = 0;
  for (int rep = 0; rep < reps; rep++) {
    double t0 = omp_get_wtime();
    #pragma omp parallel reduction(+:sink)
    {
      v16 acc[ACC]; v16 a, b;
      for (int i = 0; i < 16; i++) { a[i] = 1.0f + 1e-7f * i; b[i] = 1e-7f; }
      for (int k = 0; k < ACC; k++) acc[k] = b * (float)k;
      for (long it = 0; it < iters; it++) {
        #pragma GCC unroll 16
        for (int k = 0; k < ACC; k++) acc[k] = acc[k] * a + b;
        __asm__ volatile("" : "+v"(a));
      }
      for (int k = 0; k < ACC; k++) for (int i = 0; i < 16; i++) sink += acc[k][i];
    }
    double t = omp_get_wtime() - t0;
    double gf = (double)omp_get_max_threads() * iters * ACC * 16 * 2 / t / 1e9;
    if (gf > best) best = gf;
  }
  printf("%.1f %g\n", best, sink);
  return 0;
}
"""


class PeakProgram:
    """The FMA-chain program, compiled once (gcc -O3 -march=native -fopenmp), run on all cores."""

    def __init__(self) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        src, self.exe = os.path.join(self._tmp.name, "peak.c"), os.path.join(self._tmp.name, "peak")
        with open(src, "w") as f:
            f.write(PEAK_C)
        try:
            subprocess.run(["gcc", "-O3", "-march=native", "-mprefer-vector-width=512",
                            "-fopenmp", src, "-o", self.exe], check=True, capture_output=True)  # fmt: skip
        except (OSError, subprocess.CalledProcessError):
            self.exe = None

    def gflops(self, iterations: int = 200_000_000, reps: int = 3) -> float | None:
        """The best GFLOP/s of ``reps`` runs of ``iterations`` FMA steps per thread."""
        if self.exe is None:
            return None
        env = {**os.environ, "OMP_NUM_THREADS": str(os.cpu_count() or 1)}
        out = subprocess.run([self.exe, str(iterations), str(reps)], check=True,
                             capture_output=True, text=True, env=env)  # fmt: skip
        return float(out.stdout.split()[0])

    def sampler(self):
        """Seconds per 1e9 flop at the peak: the better of two ~60 ms runs per sample (shorter
        runs mostly measure OpenMP's start-up)."""
        return lambda: 1.0 / (self.gflops(400_000_000, 2) or float("nan"))


def numpy_sampler(n: int):
    """Seconds of NumPy's ``a @ b`` (its BLAS, all cores), a calibrated loop of ~50 ms a sample."""
    rng = np.random.default_rng(0)
    a = rng.random((n, n), dtype="float32")
    b = rng.random((n, n), dtype="float32")
    a @ b
    start = time.perf_counter()
    a @ b
    number = max(1, int(0.05 / max(time.perf_counter() - start, 1e-9)) + 1)

    def sample() -> float:
        start = time.perf_counter()
        for _ in range(number):
            a @ b
        return (time.perf_counter() - start) / number

    return sample


def run_driver(n: int, trials: int, per_iter: int, seed: int) -> dict:
    """Tune with ``mlc_jupyter.tune``; time the search to its last record, then the result."""
    from mlc_jupyter.tune import tune

    start = time.perf_counter()
    first: list[float] = []
    last: list[float] = [start]

    def on_progress(event) -> None:
        if not first and event.best_latency_s is not None:
            first.append(time.perf_counter())
        last[0] = time.perf_counter()

    work = tempfile.mkdtemp(prefix="bench-driver-")
    result = tune(matmul(n), trials=trials, per_iter=per_iter, work_dir=work, seed=seed,
                  on_progress=on_progress)  # fmt: skip
    return {
        "tune_s": last[0] - start,
        "total_s": time.perf_counter() - start,
        "first_s": first[0] - start if first else None,
        "first_abs": first[0] if first else None,
        "best_s": result.best_latency_s,
        "mod": result.mod,
        "trials": result.trials_new,
        "errors": result.build_errors + result.run_errors,
        "work": work,
    }


#: Raw ``tune_tir``'s build timeout. Its default, 30 s, livelocks here: a fresh build worker's
#: first build imports ``tvm.s_tir.tensor_intrin`` (~33 s), so it is killed and replaced by one
#: that fails the same way. Everything else stays MetaSchedule's default.
RAW_BUILD_TIMEOUT_S = 120.0


def run_raw(n: int, trials: int, per_iter: int, seed: int) -> dict:
    """Tune with raw ``ms.tune_tir`` (default runner and callbacks; build timeout raised)."""
    from mlc_jupyter.tune.options import tuning_target
    from mlc_jupyter.tvm_compat import derived_object, metaschedule

    ms = metaschedule()
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
    builder = ms.builder.LocalBuilder(
        max_workers=int(target.attrs["num-cores"]), timeout_sec=RAW_BUILD_TIMEOUT_S
    )
    with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):  # its tables
        database = ms.tune_tir(
            func, target, work, trials, num_trials_per_iter=per_iter, seed=seed, builder=builder,
            measure_callbacks=[*ms.measure_callback.MeasureCallback.create("default"),
                               FirstResult()],
        )  # fmt: skip
    tune_s = time.perf_counter() - start
    sch = ms.tir_integration.compile_tir(database, func, target)
    records = len(database.get_all_tuning_records())
    return {"tune_s": tune_s, "total_s": time.perf_counter() - start,
            "first_s": first[0] - start if first else None,
            "first_abs": first[0] if first else None, "best_s": None,
            "mod": sch.mod if sch is not None else None,
            "trials": records, "errors": None, "work": work}  # fmt: skip


def cold_probe(kind: str) -> float | None:
    """Seconds from a fresh process's start to its first measured candidate (128^3, 8 trials)."""
    code = (
        "import time; t0 = time.perf_counter(); import sys; sys.path.insert(0, 'bench');"
        "import bench_tune as b;"
        f"r = b.run_{kind}(128, 8, 8, 0);"
        "print('FIRST', r['first_abs'] - t0)"
    )
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    # Its own session, stopped as a group: raw tune_tir's pool workers outlive a finished
    # process (still importing TVM) and would load the machine during the next measurement.
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=root,
                            start_new_session=True)  # fmt: skip
    stdout, stderr = proc.communicate()
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    out = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    for line in out.stdout.splitlines():
        if line.startswith("FIRST"):
            return float(line.split()[1])
    print(out.stderr[-2000:], file=sys.stderr)
    return None


def fmt(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return f"{seconds * 1e6:.1f} us" if seconds < 1e-3 else f"{seconds * 1e3:.3f} ms"


def secs(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} s"


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def timed_in_turns(n: int, peak: PeakProgram, mods: list, rounds: int = 7) -> dict:
    """Time the fp32 peak, NumPy and each module (a tuner's best) in turns (median of ``rounds``).

    One sample of each per round, so a slow spell of the machine (under a virtual machine the
    2-core peak swings by a third) weighs on every figure alike and the ratios stay fair; 0.5 s
    between samples lets the previous library's worker threads stop spinning.
    """
    from mlc_jupyter.measure.timer import SETTLE_S
    from mlc_jupyter.tune.options import tuning_target
    from mlc_jupyter.tune.timing import KernelSamplers, in_turns

    kernels = KernelSamplers(tuning_target(None))  # the same buffers for every tuner's best
    samplers = [peak.sampler(), numpy_sampler(n)]
    samplers += [kernels.add(mod) for mod in mods if mod is not None]
    medians = in_turns(samplers, rounds, pause_s=SETTLE_S)
    timed = iter(medians[2:])
    return {
        "peak_gflops": 1.0 / medians[0] if medians[0] == medians[0] else None,
        "numpy_s": medians[1],
        "best_s": [next(timed) if mod is not None else None for mod in mods],
    }


#: Records whose own figure is within this factor of their run's best are re-timed for the
#: selection check: a single reading overstates a kernel's steady time by up to ~2.2x here.
POOL_FACTOR = 3.0


def selection(run: dict, rounds: int = 6) -> float | None:
    """The returned kernel's time over the fastest of the run's own candidates, timed in turns.

    Below MetaSchedule's 100 warm-up samples its cost model predicts at random, so a short tune
    is a random draw of candidates and two tuners' results differ by the luck of the draw. What
    a tuner's measuring decides is which of *its* candidates it returns: 1.00x means the fastest.
    """
    from mlc_jupyter.measure.timer import SETTLE_S
    from mlc_jupyter.trace.load import replays
    from mlc_jupyter.tune import top_records
    from mlc_jupyter.tune.options import tuning_target
    from mlc_jupyter.tune.timing import KernelSamplers, in_turns

    if run["mod"] is None:
        return None
    kernels = KernelSamplers(tuning_target(None), min_sample_s=0.03)
    records = top_records(run["work"], 10_000)
    pool = [r for r in records if r.latency_s < POOL_FACTOR * records[0].latency_s]
    scheduled = [replays(r.trace, r.workload_mod) for r in pool]
    samplers = [kernels.add(mod) for mod in [run["mod"], *scheduled] if mod is not None]
    medians = in_turns(samplers, rounds, pause_s=SETTLE_S / 10)
    return medians[0] / min(medians[1:])


def report(
    n: int, trials: int, peak: PeakProgram, runs: list[tuple[int, dict, dict | None]]
) -> None:
    """Print one size: a row per tuner and seed, then the rate and quality ratios."""
    flop = 2 * n**3
    rows = [(f"mlc driver s{seed}", mine) for seed, mine, _ in runs]
    rows += [(f"raw tune_tir s{seed}", raw) for seed, _, raw in runs if raw]
    turns = timed_in_turns(n, peak, [r["mod"] for _, r in rows])
    ref, peak_gf = turns["numpy_s"], turns["peak_gflops"]
    best = dict(zip((name for name, _ in rows), turns["best_s"], strict=True))

    def of_peak(seconds: float | None) -> str:
        return f"{flop / seconds / 1e9 / peak_gf:4.0%} of peak" if peak_gf and seconds else ""

    print(
        f"\n== {n}^3 fp32 matmul, {trials} trials, seeds {[s for s, _, _ in runs]} ==  ({load()})"
    )
    print(
        f"timed in turns after the tunes (median of 7 rounds): fp32 peak {peak_gf or 0:.1f} GFLOP/s"
    )
    print(f"numpy               {fmt(ref):>12}  {flop / ref / 1e9:7.1f} GFLOP/s  {of_peak(ref)}")
    for name, r in rows:
        seconds = best[name]
        rate = r["trials"] / r["tune_s"] * 60
        gf = flop / seconds / 1e9 if seconds else 0.0
        vs = ref / seconds if seconds else 0.0
        own = f"  (its own figure {fmt(r['best_s'])})" if r["best_s"] else ""
        print(f"{name:<19} {fmt(seconds):>12}  {gf:7.1f} GFLOP/s  {of_peak(seconds)}  "
              f"{vs:5.2f}x numpy  "
              f"{r['trials']:4d} trials in {r['tune_s']:6.1f} s = {rate:6.1f} trials/min  "
              f"first measurement (warm) {secs(r['first_s'])}{own}", flush=True)  # fmt: skip
    picks = [(name, selection(r)) for name, r in rows]
    print("selection (returned / fastest of its own candidates, in turns): "
          + ", ".join(f"{name} {q:.2f}x" for name, q in picks if q), flush=True)  # fmt: skip
    pairs = [(seed, mine, raw) for seed, mine, raw in runs if raw]
    if pairs:
        rate_mine = sum(m["trials"] for _, m, _ in pairs) / sum(m["tune_s"] for _, m, _ in pairs)
        rate_raw = sum(r["trials"] for _, _, r in pairs) / sum(r["tune_s"] for _, _, r in pairs)
        quality = [best[f"raw tune_tir s{s}"] / best[f"mlc driver s{s}"] for s, _, _ in pairs]
        print(f"driver/raw: trials/min {rate_mine / rate_raw:.1f}x; result speed per seed "
              f"{', '.join(f'{q:.2f}x' for q in quality)} (median {statistics.median(quality):.2f}x)",
              flush=True)  # fmt: skip


def parse_sizes(specs: list[str], trials: int) -> list[tuple[int, int, int]]:
    """``["128::3", "1024:256"]`` -> ``[(128, trials, 3), (1024, 256, 1)]``."""
    out = []
    for spec in specs:
        size, count, seeds = ([*spec.split(":"), "", ""])[:3]
        out.append((int(size), int(count) if count else trials, int(seeds) if seeds else 1))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["1024:256", "128::3", "512::3"],
                        help="N[:TRIALS[:SEEDS]], in order (default: 1024:256 128::3 512::3)")  # fmt: skip
    parser.add_argument("--trials", type=int, default=64, help="trials where a size names none")
    parser.add_argument("--per-iter", type=int, default=64,
                        help="candidates per search round (MetaSchedule's default: 64)")  # fmt: skip
    parser.add_argument("--seed", type=int, default=0, help="the first seed of each size")
    parser.add_argument("--no-raw", action="store_true", help="skip raw tune_tir")
    parser.add_argument("--no-cold", action="store_true", help="skip the cold-start probes")
    args = parser.parse_args()

    print(f"machine: {os.cpu_count()} cores, TVM_NUM_THREADS={os.environ['TVM_NUM_THREADS']}; "
          f"round size {args.per_iter}; raw build timeout {RAW_BUILD_TIMEOUT_S:.0f} s; {load()}",
          flush=True)  # fmt: skip
    peak = PeakProgram()
    print(f"fp32 peak (FMA chains, all cores): {peak.gflops() or 0:.1f} GFLOP/s", flush=True)
    if not args.no_cold:
        print(f"cold start to first measurement (fresh process, 128^3): "
              f"driver {secs(cold_probe('driver'))}", flush=True)  # fmt: skip
        if not args.no_raw:
            print(f"cold start to first measurement (fresh process, 128^3): "
                  f"raw tune_tir {secs(cold_probe('raw'))}", flush=True)  # fmt: skip
    warm = run_driver(64, 8, 8, args.seed)  # the process has tuned once: workers are warm
    print(f"warm-up tune (64^3, 8 trials) {secs(warm['total_s'])}; {load()}", flush=True)
    for n, trials, seeds in parse_sizes(args.sizes, args.trials):
        runs = []
        for seed in range(args.seed, args.seed + seeds):
            mine = run_driver(n, trials, args.per_iter, seed)
            raw = None if args.no_raw else run_raw(n, trials, args.per_iter, seed)
            runs.append((seed, mine, raw))
        report(n, trials, peak, runs)
    print(f"\ndone; {load()}", flush=True)


if __name__ == "__main__":
    main()
