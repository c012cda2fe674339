"""Bench: the register tile of 14x14 and 7x7 convolutions, a row's pixels against pixels
across rows.

A row of 14 or 7 pixels divides into 7 pixels x 1 vector of output channels at best on AVX2
(16 vector registers): each broadcast of an input feeds one FMA. Taking the image's pixels as
one axis allows 4 pixels x 2 vectors, each broadcast feeding two FMAs; of 49 pixels the last
tile has one, the other three predicated off (``conv_schedule.rule_decisions``). Each layer (NHWC, bias and ReLU fused, the weight packed in
panels the width of the tile, as ``RewriteLayout`` packs it at build time) is scheduled both
ways with ``conv_schedule.schedule_window`` and timed in turns: one thread and CPU time per call
(``time.thread_time``), which other processes on a shared machine disturb less than wall time.

    python bench/bench_conv_tiles.py [--rounds 11]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

#: 14x14 and 7x7 layers of ResNet-18 and MobileNet v1 at 224 x 224 that the default build
#: computes as direct convolutions: (name, input size, in channels, out channels, kernel, stride).
LAYERS = (
    ("resnet18 3x3/2 128->256", 28, 128, 256, 3, 2),
    ("resnet18 1x1/2 128->256", 28, 128, 256, 1, 2),
    ("mobilenet 1x1 256->512", 14, 256, 512, 1, 1),
    ("mobilenet 1x1 512->512", 14, 512, 512, 1, 1),
    ("resnet18 3x3/2 256->512", 14, 256, 512, 3, 2),
    ("resnet18 3x3 512->512", 7, 512, 512, 3, 1),
    ("mobilenet 1x1 512->1024", 7, 512, 1024, 1, 1),
    ("mobilenet 1x1 1024->1024", 7, 1024, 1024, 1, 1),
)
#: (label, Decisions arguments): the rule's tile on a row before, and across rows now.
WAYS = (("7x1 on a row", (7, 1)), ("4x2 across rows", (4, 2, 1, True)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--seconds", type=float, default=0.05, help="CPU time per sample")
    args = parser.parse_args()
    os.environ["TVM_NUM_THREADS"] = "1"

    import numpy as np

    from mlc_jupyter.compilation import conv_schedule, resolve_target
    from mlc_jupyter.compilation.default_schedule import _postprocessed
    from mlc_jupyter.measure.turns import calls_for, samples_in_turns
    from mlc_jupyter.tvm_compat import Schedule, ir_module_type, param_buffers, tvm

    _tvm = tvm()
    te, topi = _tvm.te, _tvm.topi
    target = resolve_target("llvm")
    unit = conv_schedule.vector_unit(target)
    device = _tvm.cpu()
    rng = np.random.default_rng(0)

    def layer(size: int, cin: int, cout: int, k: int, stride: int, panel: int) -> object:
        data = te.placeholder((1, size, size, cin), name="data")
        weight = te.placeholder((cout // panel, k, k, cin, panel), name="weight")
        bias = te.placeholder((cout,), name="bias")
        pad = k // 2
        padded = topi.nn.pad(data, [0, pad, pad, 0], [0, pad, pad, 0]) if pad else data
        ry, rx, rc = te.reduce_axis((0, k)), te.reduce_axis((0, k)), te.reduce_axis((0, cin))
        out = (size + 2 * pad - k) // stride + 1
        conv = te.compute(
            (1, out, out, cout),
            lambda n, y, x, f: te.sum(
                padded[n, y * stride + ry, x * stride + rx, rc]
                * weight[f // panel, ry, rx, rc, f % panel],
                axis=[ry, rx, rc],
            ),
        )
        relu = topi.nn.relu(conv + bias)
        return te.create_prim_func([data, weight, bias, relu]).with_attr("global_symbol", "main")

    kernels = {}
    for name, *shape in LAYERS:
        for way, decided in WAYS:
            decisions = conv_schedule.Decisions(*decided)
            sch = Schedule(
                ir_module_type()({"main": layer(*shape, unit.lanes * decisions.vectors)})
            )
            conv_schedule.schedule_window(sch, unit, decisions)
            if not _postprocessed(sch):
                raise SystemExit(f"{name} {way}: a post-processor refused the schedule")
            lib = _tvm.compile(sch.mod, target)
            tensors = [
                _tvm.runtime.tensor(rng.random([int(s) for s in b.shape]).astype("float32"), device)
                for b in param_buffers(sch.mod["main"])
            ]
            kernels[(name, way)] = (lib["main"], tensors, lib)
    start_load = os.getloadavg()[0]
    taken = samples_in_turns(
        [
            calls_for(lambda c=call, t=tensors: c(*t), args.seconds, time.thread_time)
            for call, tensors, _lib in kernels.values()
        ],
        args.rounds,
    )
    samples = dict(zip(kernels, taken, strict=True))
    print(
        f"14x14 and 7x7 convolutions, 1 thread, CPU time per call, {args.rounds} rounds in turns; "
        f"load {start_load:.2f} before, {os.getloadavg()[0]:.2f} after; target {target}"
    )
    print(f"{'layer':26s} {'tile':16s} {'median us':>10s} {'min us':>9s} {'GFLOP/s':>8s}  speed-up")
    for name, size, cin, cout, k, stride in LAYERS:
        out = (size + 2 * (k // 2) - k) // stride + 1
        flops = 2 * out * out * cout * cin * k * k
        before = statistics.median(samples[(name, WAYS[0][0])])
        for way, _ in WAYS:
            times = samples[(name, way)]
            median = statistics.median(times)
            print(
                f"{name:26s} {way:16s} {median * 1e6:10.1f} {min(times) * 1e6:9.1f} "
                f"{flops / median / 1e9:8.1f}  {before / median:.2f}x"
            )


if __name__ == "__main__":
    main()
