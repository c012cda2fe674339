"""Bench: a CNN's first convolution reading the NCHW input itself, against a transpose kernel
before it.

A CPU build runs convolutions in NHWC; the model's input arrives in NCHW. Before, a transpose
kernel wrote an NHWC copy of the image and the first convolution copied that into its padded
input. Now the first convolution is one kernel that reads the NCHW image into its padded copy
(``compilation/input_layout.py``). Both ways are scheduled as the default build schedules them
(``default_schedule.cpu_schedule``) and timed in turns: two threads and wall-clock time per
call as a model runs them, and one thread and CPU time (``time.thread_time``), which a busy
machine disturbs less.

    python bench/bench_input_layout.py [--rounds 11]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

#: The stems of ResNet-18 and MobileNet v1 at 224 x 224: (name, kernel, stride, out channels).
STEMS = (("resnet18", 7, 2, 64), ("mobilenet_v1", 3, 2, 32))


def _kernels(threads: int) -> dict[tuple[str, str], list]:
    os.environ["TVM_NUM_THREADS"] = str(threads)
    import numpy as np

    from mlc_jupyter.compilation import resolve_target
    from mlc_jupyter.compilation.default_schedule import cpu_schedule
    from mlc_jupyter.tvm_compat import ir_module_type, param_buffers, tvm

    _tvm = tvm()
    te, topi = _tvm.te, _tvm.topi
    target = resolve_target("llvm")
    device = _tvm.cpu()
    rng = np.random.default_rng(0)

    def build(*tensors: object) -> tuple:
        func = te.create_prim_func(list(tensors))
        scheduled = cpu_schedule(func, target)
        lib = _tvm.compile(
            ir_module_type()({"main": scheduled.with_attr("global_symbol", "main")}), target
        )
        args = [
            _tvm.runtime.tensor(rng.random([int(s) for s in b.shape]).astype("float32"), device)
            for b in param_buffers(scheduled)
        ]
        return lib["main"], args, lib

    kernels: dict[tuple[str, str], list] = {}
    for name, k, stride, channels in STEMS:
        image = te.placeholder((1, 3, 224, 224), name="image")
        weight = te.placeholder((k, k, 3, channels), name="weight")

        def conv(data: object) -> object:
            out = topi.nn.conv(data, weight, stride, k // 2, 1, 1, "NHWC", "HWIO")  # noqa: B023
            return topi.nn.relu(out)

        nhwc = te.placeholder((1, 224, 224, 3), name="nhwc")
        kernels[(name, "transpose + conv")] = [
            build(image, topi.transpose(image, (0, 2, 3, 1))),
            build(nhwc, weight, conv(nhwc)),
        ]
        kernels[(name, "one kernel")] = [
            build(image, weight, conv(topi.transpose(image, (0, 2, 3, 1))))
        ]
    return kernels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--seconds", type=float, default=0.05, help="time per sample")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    kernels = _kernels(args.threads)
    clock = time.thread_time if args.threads == 1 else time.perf_counter
    from mlc_jupyter.measure.turns import calls_for, samples_in_turns

    def image(calls: list) -> None:
        for call, tensors, _lib in calls:
            call(*tensors)

    start_load = os.getloadavg()[0]
    taken = samples_in_turns(
        [calls_for(lambda c=calls: image(c), args.seconds, clock) for calls in kernels.values()],
        args.rounds,
    )
    samples = dict(zip(kernels, taken, strict=True))
    what = "CPU time" if args.threads == 1 else "wall-clock time"
    print(
        f"the stem convolution with its input transpose, {args.threads} thread(s), {what} per "
        f"image, {args.rounds} rounds in turns; load {start_load:.2f} before, "
        f"{os.getloadavg()[0]:.2f} after"
    )
    print(f"{'model':14s} {'way':18s} {'median us':>10s} {'min us':>9s}  before / this")
    for name, *_ in STEMS:
        before = statistics.median(samples[(name, "transpose + conv")])
        for way in ("transpose + conv", "one kernel"):
            times = samples[(name, way)]
            median = statistics.median(times)
            print(
                f"{name:14s} {way:18s} {median * 1e6:10.1f} {min(times) * 1e6:9.1f}  "
                f"{before / median:.2f}x"
            )


if __name__ == "__main__":
    main()
