"""Bench: each kernel of a model's default build compiled and timed on its own, in turns.

A per-kernel profile through the VM's instrument (``profile_kernels``) times kernels inside the
model; this times each kernel alone, with random arguments of its shapes, so a schedule decision
can rest on one kernel's figure: rounds run every kernel once in turn (a busy machine slows all
of them alike), and the table gives each kernel's median and minimum over the rounds, its calls
per model run, its share, GFLOP/s and % of its roof (the machine's measured limits).

    python bench/bench_model_kernels.py --model mobilenet|resnet18|encoder [--threads 1] [--rounds 15]

Set ``TVM_NUM_THREADS`` through ``--threads`` (one thread is less disturbed by other processes
on a shared machine, and compares per-core efficiency).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model", choices=("mobilenet", "resnet18", "encoder"), default="mobilenet"
    )
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--only", default="", help="time only kernels whose name contains this")
    args = parser.parse_args()
    os.environ["TVM_NUM_THREADS"] = str(args.threads)

    import numpy as np
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from model_support import encoder_layer, mobilenet_v1, resnet18

    from mlc_jupyter.compilation import build_module
    from mlc_jupyter.compilation.model_costs import kernel_calls
    from mlc_jupyter.measure.machine import machine_limits
    from mlc_jupyter.measure.timer import argument_bytes, estimate_flops
    from mlc_jupyter.models import import_model
    from mlc_jupyter.tvm_compat import ir_module_type, param_buffers, prim_func_type, tvm

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    if args.model == "encoder":
        model, example = encoder_layer(), torch.randn(1, 128, 256)
    else:
        model = mobilenet_v1() if args.model == "mobilenet" else resnet18()
        example = torch.randn(1, 3, 224, 224)
    built = build_module(import_model(model, example))
    calls = kernel_calls(built.mod)
    limits = machine_limits()
    _tvm = tvm()
    device = _tvm.cpu()
    rng = np.random.default_rng(0)
    kernels = {}
    for gv, func in built.mod.functions_items():
        name = gv.name_hint
        if not isinstance(func, prim_func_type()) or args.only not in name:
            continue
        lib = _tvm.compile(
            ir_module_type()({"main": func.with_attr("global_symbol", "main")}), built.target
        )
        tensors = [
            _tvm.runtime.tensor(rng.random([int(s) for s in b.shape]).astype(str(b.dtype)), device)
            for b in param_buffers(func)
        ]
        timer = lib.mod.time_evaluator("main", device, number=5, repeat=1, min_repeat_ms=20)
        kernels[name] = (timer, tensors, lib)
    samples: dict[str, list[float]] = {name: [] for name in kernels}
    start_load = os.getloadavg()
    for _ in range(args.rounds):
        for name, (timer, tensors, _lib) in kernels.items():
            samples[name].append(timer(*tensors).results[0])
    rows = []
    for name, secs in samples.items():
        median, fastest = statistics.median(secs), min(secs)
        n = calls.get(name, 0)
        flops = estimate_flops(built.mod, name) or 0.0
        size = argument_bytes(built.mod, name) or 0.0
        roof = limits.roof(flops / size, args.threads) if flops and size else None
        gflops = flops / median / 1e9
        share_of_roof = f"{100 * gflops / roof:5.0f}%" if roof else "     -"
        rows.append((median * n, name, n, median, fastest, gflops, share_of_roof, flops, size))
    total = sum(r[0] for r in rows) or 1.0
    print(
        f"{args.model} default build, each kernel alone, {args.threads} thread(s), "
        f"{args.rounds} rounds in turns; load {start_load[0]:.2f} before, "
        f"{os.getloadavg()[0]:.2f} after; target {built.target}"
    )
    print(
        f"roof: peak {limits.peak(args.threads):.0f} GFLOP/s, "
        f"bandwidth {limits.bandwidth(args.threads):.1f} GB/s ({args.threads} core(s))"
    )
    print(f"{'kernel':40s} calls  median us  min us   total us  share  GFLOP/s  flop/byte  % roof")
    for total_s, name, n, median, fastest, gflops, share_of_roof, flops, size in sorted(
        rows, reverse=True
    ):
        intensity = f"{flops / size:9.1f}" if flops and size else "        -"
        print(
            f"{name:40s} {n:5d} {median * 1e6:10.1f} {fastest * 1e6:8.1f} {total_s * 1e6:10.1f}"
            f" {100 * total_s / total:5.1f}% {gflops:8.1f} {intensity}  {share_of_roof}"
        )
    print(f"sum of kernels (medians x calls) {total * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
