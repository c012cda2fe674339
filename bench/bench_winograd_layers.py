"""Bench: ResNet-18's 3x3 stride-1 layers as a direct convolution, F(2x2, 3x3) and F(4x4, 3x3).

The evidence behind Winograd's reach in the default build (``compilation/winograd.py``,
``TILE_FROM`` and ``MAX_WEIGHT_BYTES``): each layer (NHWC, a ReLU fused) is scheduled as the
default build schedules it (``default_schedule.cpu_schedule``) three ways, lowered as a build
lowers it, its weight taken as packed at build time, and the twelve kernels are timed in turns. One thread and CPU time per call (``time.thread_time``): on a machine that
other processes share, the time a kernel waits for a core is left out, so a ratio between two
ways holds where wall-clock figures swing by tens of percent.

    python bench/bench_winograd_layers.py [--rounds 11] [--target T]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

#: ResNet-18's 3x3 stride-1 convolutions: (output size, channels).
LAYERS = ((56, 64), (28, 128), (14, 256), (7, 512))
WAYS = ("direct", 2, 4)


def time_in_turns(
    kernels: dict[Any, tuple[Any, list[Any], Any]],
    rounds: int,
    seconds: float,
    clock: Callable[[], float],
) -> dict[Any, list[float]]:
    """Seconds per call of each kernel (``key: (function, arguments, library)``), one sample
    per round, the kernels in turns: a sample calls one for ``seconds`` of ``clock``."""
    samples: dict[Any, list[float]] = {key: [] for key in kernels}
    for _ in range(rounds):
        for key, (call, tensors, _lib) in kernels.items():
            call(*tensors)
            start, calls = clock(), 0
            while clock() - start < seconds:
                call(*tensors)
                calls += 1
            samples[key].append((clock() - start) / calls)
    return samples


def packed_kernel(scheduled: Any, target: Any, rng: Any) -> tuple[Any, list[Any], Any]:
    """A scheduled PrimFunc built with its weight taken as the build packs it, once (the
    kernel's own packing left out), and random arguments: ``(function, arguments, library)``."""
    from mlc_jupyter.compilation import tir_pipeline
    from mlc_jupyter.tvm_compat import compile as tvm_compile
    from mlc_jupyter.tvm_compat import (
        ir_module_type,
        param_buffers,
        remove_weight_layout_rewrite,
        tvm,
    )

    mod = remove_weight_layout_rewrite(
        ir_module_type()({"main": scheduled.with_attr("global_symbol", "main")})
    )
    lib = tvm_compile(mod, target, tir_pipeline(target))
    tensors = [
        tvm().runtime.tensor(rng.random([int(s) for s in b.shape]).astype("float32"))
        for b in param_buffers(mod["main"])
    ]
    return lib["main"], tensors, lib


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--seconds", type=float, default=0.05, help="CPU time per sample")
    parser.add_argument("--target", default="llvm", help="e.g. 'llvm -mcpu=znver3' for AVX2 code")
    args = parser.parse_args()
    os.environ["TVM_NUM_THREADS"] = "1"

    import numpy as np

    from mlc_jupyter.compilation import resolve_target, winograd
    from mlc_jupyter.compilation.default_schedule import cpu_schedule
    from mlc_jupyter.tvm_compat import tvm

    _tvm = tvm()
    te = _tvm.te
    target = resolve_target(args.target)
    rng = np.random.default_rng(0)
    kernels = {}
    for size, channels in LAYERS:
        for way in WAYS:
            data = te.placeholder((1, size, size, channels), name="data")
            if way == "direct":
                weight = te.placeholder((3, 3, channels, channels), name="weight")
                out = _tvm.topi.nn.conv2d(
                    data, weight, 1, 1, 1, data_layout="NHWC", kernel_layout="HWIO"
                )
            else:
                weight = te.placeholder((way + 2, way + 2, channels, channels), name="weight")
                out = winograd.winograd_compute(data, weight, (1, 1, 1, 1), winograd.Plan(way))
            relu = _tvm.topi.nn.relu(out)
            func = te.create_prim_func([data, weight, relu]).with_attr("layout_free_buffers", [1])
            kernels[(size, channels, way)] = packed_kernel(cpu_schedule(func, target), target, rng)
    start_load = os.getloadavg()[0]
    samples = time_in_turns(kernels, args.rounds, args.seconds, time.thread_time)
    print(
        f"ResNet-18's 3x3 layers, 1 thread, CPU time per call, {args.rounds} rounds in turns; "
        f"load {start_load:.2f} before, {os.getloadavg()[0]:.2f} after; target {target}"
    )
    print(f"{'layer':12s} {'way':9s} {'median us':>10s} {'min us':>9s}  direct / this")
    for size, channels in LAYERS:
        direct = statistics.median(samples[(size, channels, "direct")])
        for way in WAYS:
            secs = samples[(size, channels, way)]
            name = "direct" if way == "direct" else f"F({way}x{way})"
            print(
                f"{size}x{size}x{channels:<6d} {name:9s} {statistics.median(secs) * 1e6:10.1f}"
                f" {min(secs) * 1e6:9.1f}  {direct / statistics.median(secs):.2f}x"
            )


if __name__ == "__main__":
    main()
