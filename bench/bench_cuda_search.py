"""Bench: the host side of a CUDA tune — the search phase of ``%mlc_tune`` against raw ``tune_tir``.

A CUDA tune's search (sampling, mutating, post-processing each schedule — lowering it to check
it against the GPU's limits — and the cost model) runs on the host CPU, so it is measured here
without a GPU: the target is an H100's (``sm_90a`` with its limits spelled out), the builder
only hands the candidates on, and the runner reports a seeded random cost for each instead of
running it. **Those costs are for profiling the search only**: they train the cost model as much
as real ones would, not towards anything. What the search proposes is never built or run here.

Configurations, one after the other in this process, each at the same number of trials:

* ``ours``: what ``%mlc_tune`` searches with for a CUDA target (its space choice, its random
  first round then MetaSchedule's evolutionary search, every host core, full rounds);
* ``raw``: ``ms.tune_tir``'s defaults (its space from the target, evolutionary search from the
  first round, ``physical`` cores, 64 a round);
* ``before`` (``--before``): the tuner as it was: evolutionary search, one host thread (a CUDA
  target's ``num-cores``), the CPU's round sizing.

For each: setup (tensor intrinsics and tasks), seconds until the first candidate is handed to the
builder, the search seconds of each round, and search seconds per candidate; then ours against
raw as ratios. Then the per-candidate compile: ``tvm.compile`` of a candidate to CUDA source
(the host part of every build), and its CUDA source to GPU code with nvcc and with NVRTC where
each is installed, in turns. Compare figures from one run only; a shared machine swings.

    .venv/bin/python bench/bench_cuda_search.py                  # 512^3 fp32, 128 trials
    .venv/bin/python bench/bench_cuda_search.py --size 1024 --trials 64 --before
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numpy as np

os.environ.setdefault("TVM_NUM_THREADS", str(os.cpu_count() or 1))

#: An H100's CUDA target with the limits ``%mlc_tune`` completes from the device.
H100 = {
    "kind": "cuda", "arch": "sm_90a", "max_threads_per_block": 1024, "max_num_threads": 1024,
    "max_shared_memory_per_block": 49152, "thread_warp_size": 32, "registers_per_block": 65536,
    "l2_cache_size_bytes": 52428800,
}  # fmt: skip


def matmul(n: int, dtype: str):
    from tvm import te

    from mlc_jupyter.tvm_compat import tvm

    a = te.placeholder((n, n), name="A", dtype=dtype)
    b = te.placeholder((n, n), name="B", dtype=dtype)
    k = te.reduce_axis((0, n), name="k")
    c = te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    return tvm().IRModule({"main": te.create_prim_func([a, b, c])})


def workers(events: list):
    """A builder that hands candidates on and a runner that reports seeded random costs."""
    from mlc_jupyter.tvm_compat import derived_object, metaschedule

    ms = metaschedule()

    @derived_object
    class HandOn(ms.builder.PyBuilder):
        def build(self, build_inputs):
            events.append(("build", time.perf_counter(), len(build_inputs)))
            return [ms.builder.BuilderResult("not-built", None) for _ in build_inputs]

    @derived_object
    class Done(ms.runner.PyRunnerFuture):
        def __init__(self, result) -> None:
            super().__init__()
            self.value = result

        def done(self) -> bool:
            return True

        def result(self):
            return self.value

    @derived_object
    class SyntheticCosts(ms.runner.PyRunner):
        def __init__(self) -> None:
            super().__init__()
            self.rng = np.random.default_rng(0)

        def run(self, runner_inputs):
            events.append(("run", time.perf_counter(), len(runner_inputs)))
            return [
                Done(ms.runner.RunnerResult([float(self.rng.uniform(1e-5, 1e-3))], None))
                for _ in runner_inputs
            ]

    return HandOn(), SyntheticCosts()


def configuration(name: str, mod, target, trials: int) -> dict:
    """The space, strategy, threads and round size of ``name`` (see the module docstring)."""
    from mlc_jupyter.compilation.intrinsics import load_tensor_intrinsics
    from mlc_jupyter.tune.kernel import default_per_iter
    from mlc_jupyter.tune.search.strategy import RandomFirstRound
    from mlc_jupyter.tune.search.threads import host_cores
    from mlc_jupyter.tune.spaces.choice import choose_spaces

    if name == "ours":
        spaces = choose_spaces([mod], target, "default")
        load_tensor_intrinsics("cuda", spaces.tensor_intrinsics)
        return {"space": spaces.generators[0], "strategy": RandomFirstRound(),
                "threads": host_cores(target), "per_iter": default_per_iter(trials, gpu=True)}  # fmt: skip
    load_tensor_intrinsics("cuda")  # MetaSchedule's sm_80+ default space tiles onto tensor cores
    if name == "raw":
        return {"space": "post-order-apply", "strategy": "evolutionary", "threads": "physical",
                "per_iter": 64}  # fmt: skip
    return {"space": "post-order-apply", "strategy": "evolutionary", "threads": 1,
            "per_iter": default_per_iter(trials)}  # fmt: skip


def search(name: str, size: int, dtype: str, trials: int, seed: int) -> dict:
    """One configuration's search over ``trials`` candidates: setup, first candidate, rounds."""
    from mlc_jupyter.tvm_compat import metaschedule, tvm

    ms = metaschedule()
    target = tvm().target.Target(H100, host="llvm")
    mod = matmul(size, dtype)
    events: list = []
    start = time.perf_counter()
    config = configuration(name, mod, target, trials)
    threads = config["threads"]
    context = ms.TuneContext(
        mod=mod, target=target, space_generator=config["space"],
        search_strategy=config["strategy"], task_name="main", rand_state=seed,
        num_threads=threads,
    ).clone()  # fmt: skip
    setup = time.perf_counter() - start
    builder, runner = workers(events)
    cores = None if threads == "physical" else threads
    search_start = time.perf_counter()
    ms.tune.tune_tasks(
        tasks=[context], task_weights=[1.0], work_dir=tempfile.mkdtemp(prefix="bench-search-"),
        max_trials_global=trials, max_trials_per_task=trials,
        num_trials_per_iter=config["per_iter"], builder=builder, runner=runner,
        database=ms.database.MemoryDatabase(),
        cost_model=ms.cost_model.XGBModel(num_tuning_cores=cores),
        measure_callbacks=[ms.measure_callback.AddToDatabase(),
                           ms.measure_callback.UpdateCostModel()],
        task_scheduler="gradient",
    )  # fmt: skip
    rounds, since = [], search_start
    for kind, at, count in events:
        if kind == "build":
            rounds.append((at - since, count))
        else:
            since = at
    first = events[0][1] - search_start if events else float("nan")
    searched = sum(s for s, _ in rounds)
    proposed = sum(n for _, n in rounds)
    return {"name": name, "setup_s": setup, "first_s": first, "rounds": rounds,
            "search_s": searched, "proposed": proposed, "threads": threads,
            "per_iter": config["per_iter"]}  # fmt: skip


def compile_times(size: int, dtype: str, samples: int) -> dict[str, list[float]]:
    """Seconds per candidate: ``tvm.compile`` to CUDA source, then nvcc / NVRTC, in turns."""
    import importlib.util

    from mlc_jupyter.compilation.device_code import find_nvcc
    from mlc_jupyter.compilation.intrinsics import load_tensor_intrinsics
    from mlc_jupyter.tune.search.candidate_builder import build_candidate
    from mlc_jupyter.tune.spaces.choice import choose_spaces
    from mlc_jupyter.tvm_compat import metaschedule, tvm

    ms = metaschedule()
    target = tvm().target.Target(H100, host="llvm")
    mod = matmul(size, dtype)
    spaces = choose_spaces([mod], target, "default")
    load_tensor_intrinsics("cuda", spaces.tensor_intrinsics)
    context = ms.TuneContext(mod=mod, target=target, space_generator=spaces.generators[0],
                             search_strategy=ms.search_strategy.ReplayTrace(), rand_state=1,
                             num_threads=1)  # fmt: skip
    context.pre_tuning(max_trials=samples, num_trials_per_iter=samples,
                       design_spaces=context.generate_design_space())  # fmt: skip
    candidates = context.search_strategy.generate_measure_candidates()
    compilers = []
    if find_nvcc():
        compilers.append("nvcc")
    if importlib.util.find_spec("cuda") and importlib.util.find_spec("cuda.bindings"):
        compilers.append("nvrtc")
    times: dict[str, list[float]] = {"tvm.compile to CUDA source": []}
    times.update({c: [] for c in compilers})
    from tvm.support import nvcc  # TVM's own compile_cuda, the one its build callback uses

    for candidate in candidates:
        start = time.perf_counter()
        built = build_candidate(candidate.sch.mod, target)
        times["tvm.compile to CUDA source"].append(time.perf_counter() - start)
        built = getattr(built, "mod", built)
        source = "\n".join(m.inspect_source() for m in built.imports)
        for compiler in compilers:  # in turns, candidate by candidate
            fmt = "fatbin" if compiler == "nvcc" else "cubin"  # what TVM's callback asks each for
            start = time.perf_counter()
            with target:
                nvcc.compile_cuda(source, target_format=fmt, compiler=compiler)
            times[compiler].append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--trials", type=int, default=128)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--before", action="store_true", help="also the tuner as it was")
    parser.add_argument("--before-trials", type=int, default=16)
    parser.add_argument("--compile-samples", type=int, default=4)
    parser.add_argument("--compile-only", action="store_true", help="only the compile figures")
    args = parser.parse_args()

    print(f"host: {os.cpu_count()} logical cores; target: {H100['kind']} {H100['arch']}; "
          f"{args.size}^3 {args.dtype} matmul; costs synthetic (nothing runs)")  # fmt: skip
    names = [] if args.compile_only else ["ours", "raw"] + (["before"] if args.before else [])
    rows = {}
    for name in names:
        trials = args.before_trials if name == "before" else args.trials
        row = search(name, args.size, args.dtype, trials, args.seed)
        rows[name] = row
        per_round = ", ".join(f"{s:.1f}s/{n}" for s, n in row["rounds"])
        print(f"{name:7s} threads={row['threads']!s:8s} round={row['per_iter']:3d} "
              f"setup {row['setup_s']:6.1f}s  first candidate {row['first_s']:6.1f}s  "
              f"search {row['search_s']:6.1f}s for {row['proposed']:4d} "
              f"= {row['search_s'] / max(row['proposed'], 1):.3f} s/candidate  "
              f"rounds [{per_round}]", flush=True)  # fmt: skip
    per = {n: r["search_s"] / max(r["proposed"], 1) for n, r in rows.items()}
    if rows:
        ours, raw = rows["ours"], rows["raw"]
        print(f"ours/raw: search s per candidate {per['ours'] / per['raw']:.2f}x, first candidate "
              f"{ours['first_s'] / raw['first_s']:.2f}x, setup "
              f"{ours['setup_s'] / raw['setup_s']:.2f}x  (below 1: ours is faster)")  # fmt: skip
    if "before" in rows:
        print(f"before/ours: search s per candidate {per['before'] / per['ours']:.1f}x")
    times = compile_times(args.size, args.dtype, args.compile_samples)
    for what, secs in times.items():
        print(f"compile {what:28s} median {statistics.median(secs):.3f}s "
              f"(of {len(secs)} candidates)")  # fmt: skip
    if "nvcc" not in times and "nvrtc" not in times:
        print("compile: neither nvcc nor cuda-bindings here (GPU code is not compiled)")


if __name__ == "__main__":
    main()
