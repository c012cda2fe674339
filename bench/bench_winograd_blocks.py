"""Bench: how a Winograd kernel splits its work between the cores, on ResNet-18's 3x3 layers.

The evidence behind the default rule of ``compilation/winograd.py`` (``rule_decisions_for``,
``WEIGHT_PER_JOB_BYTES``): each layer (NHWC, a ReLU fused) is scheduled with the rule's register
tile and each way of making the parallel jobs the tuning space has: one row of output tiles or
all of them per job, by all the output channels or half. Its weight is taken as packed at build
time, and the kernels are timed in turns, wall clock with every core (the jobs are what is
measured). ``*`` marks the rule's choice.

    python bench/bench_winograd_blocks.py [--rounds 9] [--target T]
"""

from __future__ import annotations

import argparse
import statistics
import time

from bench_winograd_layers import packed_kernel, time_in_turns  # this folder: a script

#: ResNet-18's 3x3 stride-1 convolutions: (output size, channels, Winograd tile).
LAYERS = ((56, 64, 4), (28, 128, 4), (14, 256, 2), (7, 512, 2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--seconds", type=float, default=0.05, help="wall time per sample")
    parser.add_argument("--target", default="llvm")
    args = parser.parse_args()

    import dataclasses
    import os

    import numpy as np

    from mlc_jupyter.compilation import conv_schedule, resolve_target, winograd
    from mlc_jupyter.tvm_compat import Schedule, ir_module_type, tvm

    _tvm = tvm()
    te = _tvm.te
    target = resolve_target(args.target)
    unit = conv_schedule.vector_unit(target)
    cores = os.cpu_count() or 1  # as the default build counts them
    rng = np.random.default_rng(0)
    kernels = {}
    for size, channels, m in LAYERS:
        data = te.placeholder((1, size, size, channels), name="data")
        weight = te.placeholder((m + 2, m + 2, channels, channels), name="weight")
        row_tile = winograd.rule_row_tile(-(-size // m), unit.registers)  # as a build pads
        out = winograd.winograd_compute(data, weight, (1, 1, 1, 1), winograd.Plan(m, row_tile))
        relu = _tvm.topi.nn.relu(out)
        func = te.create_prim_func([data, weight, relu]).with_attr("layout_free_buffers", [1])
        task = ir_module_type()({"main": func.with_attr("global_symbol", "main")})
        rule = winograd.rule_decisions_for(task["main"], unit.lanes, unit.registers, cores)
        options = winograd.choices(task["main"], unit.lanes)
        for block_rows in options.block_rows:
            for k_split in options.k_splits:
                decisions = dataclasses.replace(rule, block_rows=block_rows, k_split=k_split)
                sch = Schedule(task)
                winograd.schedule_winograd(sch, unit.lanes, decisions)
                key = (size, channels, m, block_rows, k_split, decisions == rule)
                kernels[key] = packed_kernel(sch.mod["main"], target, rng)
    start_load = os.getloadavg()[0]
    samples = time_in_turns(kernels, args.rounds, args.seconds, time.perf_counter)
    print(
        f"ResNet-18's 3x3 layers by Winograd, {cores} cores, wall clock per call, {args.rounds} "
        f"rounds in turns; load {start_load:.2f} before, {os.getloadavg()[0]:.2f} after; "
        f"target {target}; rule's register tile as printed"
    )
    print(f"{'layer':18s} {'jobs':34s} {'median us':>10s} {'min us':>9s}")
    for (size, channels, m, block_rows, k_split, is_rule), secs in samples.items():
        rows = "1 row of tiles" if block_rows == 1 else f"all {block_rows} rows"
        jobs = f"{rows}, {'all' if k_split == 1 else f'1/{k_split} of the'} channels"
        print(
            f"{size}x{size}x{channels:<5d} F({m}x{m}) {jobs:34s} "
            f"{statistics.median(secs) * 1e6:10.1f} {min(secs) * 1e6:9.1f}{' *' if is_rule else ''}"
        )


if __name__ == "__main__":
    main()
