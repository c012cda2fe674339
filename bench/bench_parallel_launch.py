"""What one call of a parallel kernel pays before any work: TVM's fork/join of its thread pool.

The same two-element store is built as a ``T.parallel`` loop (one element per thread) and as a
serial loop; both are timed with ``time_module`` in turns (one timing of each per round, median
over the rounds). The difference is the floor under any small parallel kernel, such as the book's
128³ ``mm_relu`` tuned (a few microseconds a call): why it stays further from the fp32 peak than
large matmuls.

Usage: ``TVM_NUM_THREADS=2 python bench/bench_parallel_launch.py [--rounds 15]``. Run it on a
quiet machine.
"""

from __future__ import annotations

import argparse
import os
import statistics

LAUNCH = """
@tvm.script.ir_module
class Launch:
    @T.prim_func
    def parallel(A: T.Buffer((2,), "float32")):
        T.func_attr({"global_symbol": "parallel", "tir.noalias": True})
        for i in T.parallel(2):
            with T.block("A"):
                vi = T.axis.spatial(2, i)
                A[vi] = T.float32(1)

    @T.prim_func
    def serial(A: T.Buffer((2,), "float32")):
        T.func_attr({"global_symbol": "serial", "tir.noalias": True})
        for i in range(2):
            with T.block("A"):
                vi = T.axis.spatial(2, i)
                A[vi] = T.float32(1)
"""


def main() -> None:
    from mlc_jupyter.cells import parse_script
    from mlc_jupyter.compilation import build_module
    from mlc_jupyter.measure import time_module

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15, help="timings of each kernel")
    args = parser.parse_args()
    built = build_module(parse_script(LAUNCH, kind="tir").objects["Launch"], "llvm")
    kernels = ("parallel", "serial")
    samples: dict[str, list[float]] = {k: [] for k in kernels}
    for _ in range(args.rounds):
        for kernel in kernels:
            samples[kernel].append(time_module(built, func_name=kernel).median_s)
    parallel, serial = (statistics.median(samples[k]) for k in kernels)
    threads = os.environ.get("TVM_NUM_THREADS", "all cores")
    print(f"TVM_NUM_THREADS={threads}; median of {args.rounds} rounds timed in turns")
    print(f"{'kernel':28} {'us per call':>12}")
    print(f"{'T.parallel(2), one store each':28} {parallel * 1e6:12.3f}")
    print(f"{'serial loop, two stores':28} {serial * 1e6:12.3f}")
    print(f"fork/join of the thread pool: {(parallel - serial) * 1e6:.3f} us per call")


if __name__ == "__main__":
    main()
