"""What one call of a parallel kernel pays before any work: TVM's fork/join of its thread pool.

The same two-element store is built as a ``T.parallel`` loop (one element per thread) and as a
serial loop; both are timed with ``time_module`` in turns (one timing of each per round, median
over the rounds). The difference is the floor under any small parallel kernel, such as the book's
128³ ``mm_relu`` tuned (a few microseconds a call): why it stays further from the fp32 peak than
large matmuls.

It is also the plainest sign of which of its two states this VM's host is in: the fork/join
crosses from one core to the other, and on some runs it costs several times what it does on
others, and the whole of MobileNet is slower with it, its memory-bound kernels most (the cores
far apart, each reading what the other wrote). The hand-off (``HANDOFF``) measures that
directly: a parallel loop reading what the loop before it wrote on the same core, or on the
other one. ``--model`` shows all three, window after window, in one process: the model's time,
the fork/join and the hand-off beside it. ``bench_models.py`` prints the fork/join and the
hand-off before and after each race, so a race says which state it ran in.

Usage: ``TVM_NUM_THREADS=2 python bench/bench_parallel_launch.py [--rounds 15]``; ``--model
mobilenet --windows 15`` for the model beside it. Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

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


def _in_turns(source: str, module: str, kernels: tuple[str, str], rounds: int) -> list[float]:
    """The median time per call of two kernels of the TVMScript ``source``'s ``module``, timed in
    turns (one timing of each per round)."""
    from mlc_jupyter.cells import parse_script
    from mlc_jupyter.compilation import build_module
    from mlc_jupyter.measure import time_module

    built = build_module(parse_script(source, kind="tir").objects[module], "llvm")
    samples: dict[str, list[float]] = {k: [] for k in kernels}
    for _ in range(rounds):
        for kernel in kernels:
            samples[kernel].append(time_module(built, func_name=kernel).median_s)
    return [statistics.median(samples[k]) for k in kernels]


def fork_join_s(rounds: int = 5) -> tuple[float, float]:
    """The parallel and the serial kernel's median time per call, timed in turns."""
    parallel, serial = _in_turns(LAUNCH, "Launch", ("parallel", "serial"), rounds)
    return parallel, serial


#: Two parallel loops in one kernel, one element of the pool per half: the first adds one to each
#: half of ``X``, the second sums each half into ``Y``. In ``own`` each thread reads the half it
#: wrote; in ``other``, the half the other thread wrote, as a kernel does when the kernel before
#: it split its output another way.
_HANDOFF_KERNEL = """
    @T.prim_func
    def NAME(X: T.Buffer((2 * HALF,), "float32"), Y: T.Buffer((32,), "float32")):
        T.func_attr({"global_symbol": "NAME", "tir.noalias": True})
        for i in T.parallel(2):
            for k in range(HALF // 16):
                for j in T.vectorized(16):
                    X[WRITTEN * HALF + k * 16 + j] = X[WRITTEN * HALF + k * 16 + j] + T.float32(1)
        for i in T.parallel(2):
            for j in T.vectorized(16):
                Y[i * 16 + j] = T.float32(0)
            for k in range(HALF // 16):
                for j in T.vectorized(16):
                    Y[i * 16 + j] = Y[i * 16 + j] + X[i * HALF + k * 16 + j]
"""
HANDOFF = "@tvm.script.ir_module\nclass Handoff:" + "".join(
    _HANDOFF_KERNEL.replace("NAME", name).replace("WRITTEN", written)
    for name, written in (("own", "i"), ("other", "(1 - i)"))
)
#: Floats in each half: 392 KiB, what each core of MobileNet's 14x14 layers writes.
HALF = 100352


def handoff_s(rounds: int = 5) -> tuple[float, float]:
    """The median time per call of ``HANDOFF``'s two kernels, timed in turns: each core reading
    what it wrote, and what the other core wrote."""
    source = HANDOFF.replace("HALF", str(HALF))
    own, other = _in_turns(source, "Handoff", ("own", "other"), rounds)
    return own, other


def model_beside_fork_join(name: str, windows: int, window_s: float) -> None:
    """``name``'s default build timed for ``window_s`` seconds at a time, the fork/join after
    each window: whether the model's slow spells are the fork/join's."""
    from bench_models import build_model

    from mlc_jupyter.compilation import build_module
    from mlc_jupyter.compilation.call import prepare, relax_vm, to_device
    from mlc_jupyter.measure.timer import model_inputs
    from mlc_jupyter.models import import_model

    built = build_module(import_model(*build_model(name)))
    sig = prepare(built, None)
    tensors, _ = to_device(built, sig, tuple(model_inputs(built, sig, None, 0)))
    run = relax_vm(built)[sig.name]
    for _ in range(20):
        run(*tensors)
    print(f"{'window':>6} {name + ' ms per call':>24} {'fork/join us':>13} "
          f"{'hand-off own us':>16} {'other us':>9}")  # fmt: skip
    for window in range(windows):
        samples, end = [], time.perf_counter() + window_s
        while time.perf_counter() < end:
            start = time.perf_counter()
            for _ in range(10):
                run(*tensors)
            samples.append((time.perf_counter() - start) / 10)
        parallel, serial = fork_join_s()
        own, other = handoff_s()
        print(f"{window:>6} {statistics.median(samples) * 1e3:>24.3f} "
              f"{(parallel - serial) * 1e6:>13.3f} {own * 1e6:>16.1f} {other * 1e6:>9.1f}",
              flush=True)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15, help="timings of each kernel")
    parser.add_argument("--model", help="a model of bench_models.py timed beside the fork/join")
    parser.add_argument("--windows", type=int, default=15, help="with --model: how many windows")
    parser.add_argument("--window-s", type=float, default=3.0, help="with --model: seconds each")
    args = parser.parse_args()
    threads = os.environ.get("TVM_NUM_THREADS", "all cores")
    if args.model:
        print(f"TVM_NUM_THREADS={threads}; the model's median per window, then the fork/join")
        model_beside_fork_join(args.model, args.windows, args.window_s)
        return
    parallel, serial = fork_join_s(args.rounds)
    print(f"TVM_NUM_THREADS={threads}; median of {args.rounds} rounds timed in turns")
    print(f"{'kernel':28} {'us per call':>12}")
    print(f"{'T.parallel(2), one store each':28} {parallel * 1e6:12.3f}")
    print(f"{'serial loop, two stores':28} {serial * 1e6:12.3f}")
    print(f"fork/join of the thread pool: {(parallel - serial) * 1e6:.3f} us per call")
    own, other = handoff_s(args.rounds)
    print(f"hand-off of {HALF * 4 // 1024} KiB per core: {own * 1e6:.1f} us reading what the "
          f"same core wrote, {other * 1e6:.1f} us what the other core wrote")  # fmt: skip


if __name__ == "__main__":
    main()
