"""What isolation costs: a call of an isolated build (``--isolate``: the worker process, arguments
through shared memory) against the same build called in process, as a user calls them (NumPy
arrays in, the output written into the caller's array).

Two kernels: the book's 128x128 ``mm_relu`` as written (a call of tens of microseconds to a few
milliseconds, where the round trip shows) and a 1024x1024 matmul scheduled with ``parallel`` and
``vectorize`` (tens of milliseconds, where it should vanish). The two calls alternate (one of
each per turn), so both see the same machine; medians over ``--calls`` turns and their ratio.
In turns, each call also shares the cores with the other process's TVM threads, which spin for a
while after a parallel kernel; ``alone`` is the isolated call's median over as many calls in a
row, after this process's threads went quiet (a notebook that calls only the isolated build).
Also the worker's start (TVM imported again) and the first call after a crash's restart.

Usage: ``python bench/bench_isolate.py [--calls 200] [--large-calls 15]``.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from collections.abc import Callable

import numpy as np
from bench_build_time import LISTING  # the book's mm_relu

MATMUL_1024 = """
@T.prim_func
def matmul(A: T.Buffer((1024, 1024), "float32"), B: T.Buffer((1024, 1024), "float32"),
           C: T.Buffer((1024, 1024), "float32")):
    for i, j, k in T.grid(1024, 1024, 1024):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = T.float32(0)
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
"""


def kernels() -> dict[str, tuple[object, str, list[np.ndarray]]]:
    """name -> (module, function, arguments)."""
    from mlc_jupyter.cells import parse_script
    from mlc_jupyter.tvm_compat import Schedule

    small = parse_script(LISTING.read_text(), kind="tir").objects["MyModule"]
    sch = Schedule(parse_script(MATMUL_1024, kind="tir").objects["matmul"])
    block = sch.get_sblock("C")
    i, j, k = sch.get_loops(block)
    j0, j1 = sch.split(j, factors=[None, 16])
    sch.reorder(i, j0, k, j1)
    sch.parallel(i)
    sch.vectorize(j1)
    sch.decompose_reduction(block, k)
    rng = np.random.default_rng(0)

    def args(n: int) -> list[np.ndarray]:
        return [rng.random((n, n), dtype="float32") for _ in range(2)] + [
            np.zeros((n, n), "float32")
        ]

    return {
        "mm_relu 128x128 (book 2.4)": (small, "mm_relu", args(128)),
        "matmul 1024x1024 (parallel, vectorized)": (sch.mod, "main", args(1024)),
    }


def wall_s(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200, help="turns for the small kernel")
    parser.add_argument("--large-calls", type=int, default=15, help="turns for the large one")
    options = parser.parse_args()

    from mlc_jupyter.compilation import build_module
    from mlc_jupyter.compilation.isolate import worker

    print(f"# bench_isolate, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")  # fmt: skip
    print(f"{'kernel':42} {'direct ms':>10} {'isolated ms':>12} {'extra ms':>9} {'ratio':>7} "
          f"{'alone ms':>9} {'ratio':>7}")  # fmt: skip
    for name, (mod, func, args) in kernels().items():
        direct = build_module(mod, "llvm")[func]
        isolated = build_module(mod, "llvm", isolate=True)[func]
        expected = args[-1].copy()
        direct(*args)
        expected[:] = args[-1]
        args[-1][:] = 0
        isolated(*args)  # the worker is up, the library loaded
        np.testing.assert_allclose(args[-1], expected, rtol=1e-5)
        turns = options.calls if "128" in name else options.large_calls
        taken: list[list[float]] = [[], []]
        for _ in range(turns):
            taken[0].append(wall_s(lambda: direct(*args)))  # noqa: B023 - called at once
            taken[1].append(wall_s(lambda: isolated(*args)))  # noqa: B023
        plain, far = (statistics.median(t) for t in taken)
        time.sleep(1.0)  # this process's TVM threads stop spinning
        alone = statistics.median(wall_s(lambda: isolated(*args)) for _ in range(turns))  # noqa: B023
        print(f"{name:42} {plain * 1e3:10.3f} {far * 1e3:12.3f} {(far - plain) * 1e3:9.3f} "
              f"{far / plain:7.2f} {alone * 1e3:9.3f} {alone / plain:7.2f}")  # fmt: skip
    process = worker()
    process.kill()
    small, func, args = kernels()["mm_relu 128x128 (book 2.4)"]
    isolated = build_module(small, "llvm", isolate=True)[func]
    print(f"\nfirst call with a new worker (its start: Python, TVM, the library): "
          f"{wall_s(lambda: isolated(*args)):.2f} s")  # fmt: skip


if __name__ == "__main__":
    main()
