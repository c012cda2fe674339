"""Overhead of ``%mlc_build`` / ``%mlc_time`` against raw TVM, and the book's matmul GFLOP/s.

1. build: a cold ``build_module`` (cache cleared), a raw ``tvm.compile`` and a cached rebuild of
   the book's ``mm_relu``; the cached/cold ratio should stay under 5%.
2. timing: wall time of ``%mlc_time`` (real IPython shell, -o) and of ``time_module`` against a
   hand-written ``time_evaluator`` call with the same number / repeat / min_repeat_ms.
3. GFLOP/s of naive / ``schedule_mm`` (jfactor 4) / jfactor 8 matmuls next to NumPy and PyTorch
   at 128, 512 and 1024 on the host CPU target.
4. a whole model's cold default build (``--models resnet18 mobilenet``; every cache cleared, the
   disk cache written as ``%mlc_build`` writes it): the first build after ``import_model`` (the
   issue's measure), the build's wall time with the schedules made too, its stages (operators
   legalised, fused and scheduled; weights packed; TVM's compile in one part) and the first call
   after it; then, each in a fresh process, a cold build, its background save to the disk cache
   and the next process's cache hit (a kernel restart).

Usage: ``python bench/bench_build_time.py [--sizes 128 512 1024] [--target T] [--models ...]
[--only models]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

LISTING = Path(__file__).resolve().parents[1] / "tests" / "course" / "listings" / "ch2_mm_relu.py"


def median_s(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def matmul(n: int):
    from tvm import te

    a = te.placeholder((n, n), "float32", name="A")
    b = te.placeholder((n, n), "float32", name="B")
    k = te.reduce_axis((0, n), name="k")
    c = te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    return te.create_prim_func([a, b, c]).with_attr("global_symbol", "main")


def schedule_mm(func, jfactor: int):
    """The book's §4.3 ``schedule_mm``: split j, reorder, decompose the reduction."""
    from mlc_jupyter.tvm_compat import Schedule, tvm

    sch = Schedule(tvm().IRModule({"main": func}))
    block_c = sch.get_sblock("C", "main")
    i, j, k = sch.get_loops(block_c)
    j0, j1 = sch.split(j, factors=[None, jfactor])
    sch.reorder(i, j0, k, j1)
    sch.decompose_reduction(block_c, k)
    return sch.mod


def bench_build(target: str, runs: int) -> None:
    from mlc_jupyter.cells import parse_script
    from mlc_jupyter.compilation import build_module, clear_cache, resolve_target
    from mlc_jupyter.tvm_compat import compile as tvm_compile

    mod = parse_script(LISTING.read_text(), {}, kind="tir").objects["MyModule"]
    resolved = resolve_target(target)

    def cold():
        clear_cache()
        build_module(mod, target)

    raw = median_s(lambda: tvm_compile(mod, resolved), runs)
    cold_s = median_s(cold, runs)
    cached = median_s(lambda: build_module(mod, target), runs * 10)
    print(f"build   raw tvm.compile     {raw * 1e3:8.2f} ms")
    print(f"build   cold build_module   {cold_s * 1e3:8.2f} ms   ({cold_s / raw:.2f}x raw)")
    print(f"build   cached rebuild      {cached * 1e3:8.3f} ms   ({cached / cold_s:.1%} of cold)")


def bench_timing(target: str, runs: int) -> None:
    import numpy as np
    from IPython.testing.globalipapp import start_ipython

    from mlc_jupyter.cells import parse_script
    from mlc_jupyter.compilation import build_module, device_for
    from mlc_jupyter.measure import time_module
    from mlc_jupyter.tvm_compat import empty, tensor

    mod = parse_script(LISTING.read_text(), {}, kind="tir").objects["MyModule"]
    built = build_module(mod, target)
    opts = {"number": 10, "repeat": 3, "min_repeat_ms": 0}

    def raw():
        rng = np.random.default_rng(0)
        a = tensor(rng.random((128, 128), dtype="float32"))
        b = tensor(rng.random((128, 128), dtype="float32"))
        c = empty((128, 128), "float32")
        timer = built.executable.mod.time_evaluator("mm_relu", device_for(target), **opts)
        return timer(a, b, c).median

    shell = start_ipython()
    shell.run_line_magic("load_ext", "mlc_jupyter")
    shell.user_ns["MyModule"] = mod
    shell.run_line_magic("mlc_build", f'MyModule --target "{target}"')
    line = "MyModule_lib --number 10 --repeat 3 --min-repeat-ms 0 -o"
    raw_s = median_s(raw, runs)
    service_s = median_s(lambda: time_module(built, **opts), runs)
    checked_s = median_s(lambda: time_module(built, ref="np.maximum(A @ B, 0)", **opts), runs)
    magic_s = median_s(lambda: shell.run_line_magic("mlc_time", line), runs)
    print(f"timing  raw time_evaluator  {raw_s * 1e3:8.2f} ms (wall, 3x10 calls)")
    print(f"timing  time_module         {service_s * 1e3:8.2f} ms   ({service_s / raw_s:.2f}x raw)")
    print(f"timing  + NumPy check       {checked_s * 1e3:8.2f} ms   ({checked_s / raw_s:.2f}x raw)")
    print(f"timing  %mlc_time -o        {magic_s * 1e3:8.2f} ms   ({magic_s / raw_s:.2f}x raw)")


def bench_gflops(target: str, sizes: list[int]) -> None:
    from mlc_jupyter.measure import Sampling, time_functions

    print(
        f"{'n':>5} "
        + " ".join(f"{name:>10}" for name in ("naive", "sched_mm", "jfactor8", "numpy", "torch"))
        + "   GFLOP/s"
    )
    for n in sizes:
        func = matmul(n)
        variants = {
            "naive": func,
            "sched_mm": schedule_mm(func, 4),
            "jfactor8": schedule_mm(func, 8),
        }
        fast = n >= 1024
        report = time_functions(
            variants,
            target,
            ref="A @ B",
            sampling=Sampling(
                repeat=3, min_repeat_ms=0 if fast else 50, number=1 if fast else None
            ),
        )
        cells = []
        for t in report.timings:
            cells.append(f"{t.gflops:10.2f}" if t.gflops else f"{'failed':>10}")
        print(f"{n:>5} " + " ".join(cells))


def _timed(stages: dict[str, list[float]], stage: str, fn: Callable[[], object]) -> object:
    start = time.perf_counter()
    out = fn()
    stages.setdefault(stage, []).append(time.perf_counter() - start)
    return out


def _cold_builds(make, example, runs: int) -> dict[str, list[float]]:
    """``runs`` cold builds of a model (``make()`` gives it), each stage timed, and the first
    call after; 'after import' is the first build after ``import_model`` (its schedules
    prepared), as ``bench_models.py``'s 'default build' times it."""
    import torch

    from mlc_jupyter.compilation import build_module, clear_cache, resolve_target
    from mlc_jupyter.compilation.default_schedule import pack_weights, prepare_model
    from mlc_jupyter.models import import_model
    from mlc_jupyter.tvm_compat import compile as tvm_compile

    target = resolve_target(None)
    stages: dict[str, list[float]] = {}
    for _ in range(runs):
        clear_cache()
        imported = import_model(make(), torch.from_numpy(example))
        _timed(stages, "after import", lambda i=imported: build_module(i))
        clear_cache()
        prepared = _timed(stages, "prepare", lambda i=imported: prepare_model(i.mod, target))
        packed = _timed(stages, "pack", lambda p=prepared: pack_weights(p.mod))
        _timed(stages, "compile", lambda p=packed: tvm_compile(p, target))
        clear_cache()
        built = _timed(stages, "build", lambda i=imported: build_module(i))
        _timed(stages, "first call", lambda b=built: b(example))
    return stages


def bench_model_builds(models: list[str], runs: int) -> None:
    import sys

    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from model_support import mobilenet_v1, resnet18

    makers = {"resnet18": resnet18, "mobilenet": mobilenet_v1}
    for name in models:
        x = torch.randn(1, 3, 224, 224)
        stages = _cold_builds(makers[name], x.numpy(), runs)
        cells = "  ".join(f"{k} {statistics.median(v):.2f} s" for k, v in stages.items())
        print(f"model   {name:10s} cold build_module (median of {runs}): {cells}")


#: A kernel's first build of a model after ``import_model``, timed, then the wait for the disk
#: cache's background save; run twice on one cache folder, the second is a restart's cache hit.
_RESTART = """
import sys, time
sys.path.insert(0, {tests!r})
import torch
from model_support import {name}
from mlc_jupyter.compilation import build_module, wait_for_saved_builds
from mlc_jupyter.models import import_model
torch.manual_seed(0)
imported = import_model({name}(), torch.randn(1, 3, 224, 224))
start = time.perf_counter()
built = build_module(imported)
build_s = time.perf_counter() - start
start = time.perf_counter()
wait_for_saved_builds()
print(built.from_disk, build_s, time.perf_counter() - start)
"""


def bench_model_restarts(models: list[str], runs: int) -> None:
    """A model's build in a fresh kernel, cold, then in the next kernel (a disk-cache hit): each
    a process of its own on an empty cache folder, the cold one followed by its background save
    (what a ``%mlc_time`` right after the build waits for)."""
    import os
    import subprocess
    import sys
    import tempfile

    tests = str(Path(__file__).resolve().parents[1] / "tests")
    names = {"resnet18": "resnet18", "mobilenet": "mobilenet_v1"}
    for name in models:
        cold, save, hit = [], [], []
        for _ in range(runs):
            with tempfile.TemporaryDirectory() as cache:
                env = {**os.environ, "MLC_JUPYTER_CACHE": cache}
                code = _RESTART.format(tests=tests, name=names[name])
                for fresh in (True, False):
                    out = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                                         capture_output=True, text=True).stdout.split()  # fmt: skip
                    from_disk, build_s, save_s = out[-3] == "True", float(out[-2]), float(out[-1])
                    assert from_disk is not fresh, "the second build was not a cache hit"
                    (cold if fresh else hit).append(build_s)
                    save.extend([save_s] if fresh else [])
        print(f"model   {name:10s} in a fresh kernel (median of {runs}): cold build "
              f"{statistics.median(cold):.2f} s, its background save {statistics.median(save):.2f} s, "
              f"the next kernel's hit {statistics.median(hit):.2f} s")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[128, 512, 1024])
    parser.add_argument("--target", default="llvm -num-cores=2")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--models", nargs="*", default=["resnet18", "mobilenet"], choices=["resnet18", "mobilenet"]
    )
    parser.add_argument("--only", choices=["models"], help="run the model builds only")
    args = parser.parse_args()
    from mlc_jupyter.compilation import describe_target

    print(f"target: {describe_target(args.target)}")
    if args.only != "models":
        bench_build(args.target, args.runs)
        bench_timing(args.target, args.runs)
        bench_gflops(args.target, args.sizes)
    bench_model_builds(args.models, min(args.runs, 3))
    bench_model_restarts(args.models, min(args.runs, 3))


if __name__ == "__main__":
    main()
