"""Bench: the register tile of MobileNet's depthwise kernels, and the whole model with each rule.

Each depthwise kernel of MobileNet v1's default build is scheduled by
:func:`mlc_jupyter.compilation.conv_schedule.schedule_window` with the default tile
(:func:`~mlc_jupyter.compilation.conv_schedule.depthwise_rule_tile`), with the convolution's
rule (:func:`~mlc_jupyter.compilation.conv_schedule.rule_tile`, the most accumulators that fit)
and with the tiles given, lowered as a build lowers them, and every (kernel, tile) is timed in
turns (TVM's timer, warm caches).
Then the whole model is built with each rule in one process and timed in turns.

    python bench/bench_depthwise_tiles.py [--tiles 7x2 4x4 7x1] [--rounds 9]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiles", nargs="*", default=["7x2", "4x4", "7x1"])
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()

    import numpy as np
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from fresh_build import whole_model
    from model_support import mobilenet_v1

    from mlc_jupyter.compilation import conv_schedule, tir_pipeline
    from mlc_jupyter.compilation.default_schedule import (
        _postprocessed,
        prepare_model,
    )
    from mlc_jupyter.compilation.signatures import as_module
    from mlc_jupyter.compilation.targets import describe_target, resolve_target
    from mlc_jupyter.models import import_model
    from mlc_jupyter.tvm_compat import Schedule, param_buffers, prim_func_type, tvm
    from mlc_jupyter.tvm_compat import compile as tvm_compile

    torch.manual_seed(0)
    imported = import_model(mobilenet_v1(), torch.randn(1, 3, 224, 224))
    target = resolve_target(None)
    unit = conv_schedule.vector_unit(target)
    print(f"target {describe_target(target)}: {unit.lanes} lanes, {unit.registers} registers")
    fused = prepare_model(as_module(imported), target).fused
    _tvm, rng, device = tvm(), np.random.default_rng(0), tvm().cpu()
    timers = {}
    for gv, func in fused.functions_items():
        if not isinstance(func, prim_func_type()):
            continue
        task = _tvm.IRModule({"main": func.with_attr("global_symbol", "main")})
        try:
            probe = Schedule(task)
            window = conv_schedule.find_window(probe, unit.lanes)
        except conv_schedule.NotWindow:
            continue
        if not conv_schedule.is_depthwise(probe, window):
            continue
        default = conv_schedule.depthwise_rule_tile(probe, window, unit.registers)
        rule = conv_schedule.rule_tile(window, unit.registers)
        tiles = {"default": default, "rule_tile": rule}
        tiles.update({t: tuple(int(n) for n in t.split("x")) for t in args.tiles})
        arguments = [
            _tvm.runtime.tensor(rng.standard_normal([int(d) for d in b.shape]).astype("float32"))
            for b in param_buffers(func)
        ]
        for label, (rows, vectors) in tiles.items():
            sch = Schedule(task)
            try:
                conv_schedule.schedule_window(sch, unit, conv_schedule.Decisions(rows, vectors))
                if not _postprocessed(sch):
                    continue
                library = tvm_compile(sch.mod, target, tir_pipeline(target)).mod
            except Exception:  # noqa: BLE001, S112 - a tile that does not divide this kernel
                continue
            timer = library.time_evaluator("main", device, number=20)
            timers[(gv.name_hint, label, (rows, vectors))] = (timer, arguments)
    samples = {key: [] for key in timers}
    for _ in range(args.rounds):
        for key, (timer, arguments) in timers.items():
            samples[key].append(timer(*arguments).mean)
    print(f"each depthwise kernel alone, {args.rounds} rounds in turns (median us, x default)")
    kernels = dict.fromkeys(name for name, _, _ in timers)
    for name in kernels:
        rows = {k: statistics.median(v) for k, v in samples.items() if k[0] == name}
        base = next(t for (_, label, _), t in rows.items() if label == "default")
        cells = [f"{label} {tile[0]}x{tile[1]} {t * 1e6:6.1f} ({base / t:.2f}x)"
                 for (_, label, tile), t in rows.items()]  # fmt: skip
        print(f"{name:28} " + " | ".join(cells))

    depthwise_rule_tile = conv_schedule.depthwise_rule_tile
    whole = {}
    for label, rule in (
        ("default", depthwise_rule_tile),
        ("rule_tile", lambda sch, window, registers: conv_schedule.rule_tile(window, registers)),
    ):
        conv_schedule.depthwise_rule_tile = rule
        made = whole_model(imported)
        whole[label] = (made.timer, made.tensors, [])
    conv_schedule.depthwise_rule_tile = depthwise_rule_tile
    for _ in range(args.rounds):
        for timer, tensors, taken in whole.values():
            taken.append(timer(*tensors).mean)
    for label, (_, _, taken) in whole.items():
        print(f"whole model, depthwise tiles by {label}: {statistics.median(taken) * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
