"""Bench: ResNet-18's direct convolutions with their channel reduction unrolled by the default
rule, and not (one input channel per step, the rule before).

The evidence behind the unroll in ``compilation/conv_schedule.py``'s ``rule_decisions``: the
model is built twice, by the rule and by the rule with ``unroll=1``, and each direct convolution
of the two builds is timed in turns by TVM's timer, with its arguments flushed from the caches
before each call (cold: the weight comes from memory, as it does once per model call when the
model's weights do not fit in the cache) and not (warm). Then the two whole models, in turns.

    python bench/bench_conv_unroll.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # model_support


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=5, help="TVM timer samples per round")
    args = parser.parse_args()

    import torch
    from model_support import resnet18

    from mlc_jupyter.compilation import build_module, clear_cache, conv_schedule, device_for
    from mlc_jupyter.compilation.call import prepare, relax_vm, to_device
    from mlc_jupyter.compilation.default_schedule import forget_prepared
    from mlc_jupyter.measure.timer import model_inputs
    from mlc_jupyter.models import import_model
    from mlc_jupyter.tvm_compat import kernel_library, kernel_timer

    torch.manual_seed(0)
    imported = import_model(resnet18(), torch.randn(1, 3, 224, 224))
    rule = conv_schedule.rule_decisions

    def one_step(*rule_args):
        return dataclasses.replace(rule(*rule_args), unroll=1)

    builds = {}
    for way, decide in (("rule", rule), ("unroll 1", one_step)):
        conv_schedule.rule_decisions = decide
        clear_cache(disk=False)
        forget_prepared()
        try:
            builds[way] = build_module(imported, force=True, persist=False)
        finally:
            conv_schedule.rule_decisions = rule
    device = device_for(builds["rule"].target)
    # each kernel call of one model run, its arguments (the VM's instrument) and library
    calls = {}
    for way, built in builds.items():
        sig = prepare(built, None)
        tensors, _ = to_device(built, sig, tuple(model_inputs(built, sig, None, 0)))
        vm = relax_vm(built)
        recorded = {}

        def record(func, symbol, before, ret, *call_args, recorded=recorded):
            if before:
                recorded.setdefault(str(symbol), call_args)
            return 0

        vm[sig.name](*tensors)
        vm.set_instrument(record)
        vm[sig.name](*tensors)
        libraries = {name: kernel_library(built.executable, name) for name in recorded}
        calls[way] = {
            name: (libraries[name], call_args)
            for name, call_args in recorded.items()
            if libraries[name] is not None  # a kernel, not a VM builtin
        }
    # the direct convolutions: the kernels whose code the unroll changed
    kernels = sorted(
        name
        for name in calls["rule"]
        if "conv2d" in name
        and "winograd" not in name
        and builds["rule"].mod[name].script() != builds["unroll 1"].mod[name].script()
    )
    samples: dict = {(name, way, cold): [] for name in kernels for way in builds for cold in (1, 0)}
    start_load = os.getloadavg()[0]
    for _ in range(args.rounds):
        for name, way, cold in samples:
            library, call_args = calls[way][name]
            timer = kernel_timer(library, name, device, args.repeat, bool(cold))
            samples[(name, way, cold)].append(float(timer(*call_args).median))
    print(
        f"ResNet-18's direct convolutions (default build), {os.cpu_count()} cores, TVM's timer "
        f"(median of {args.repeat} calls) in {args.rounds} rounds in turns, median of rounds; "
        f"load {start_load:.2f} before, {os.getloadavg()[0]:.2f} after; "
        f"target {builds['rule'].target}"
    )
    print(
        f"{'kernel':36s} {'cold, unroll 1':>14s} {'cold, rule':>11s} {'speed-up':>8s}   "
        f"{'warm, unroll 1':>14s} {'warm, rule':>11s} {'speed-up':>8s}"
    )
    for name in kernels:
        row = []
        for cold in (1, 0):
            base = statistics.median(samples[(name, "unroll 1", cold)])
            unrolled = statistics.median(samples[(name, "rule", cold)])
            row.append(f"{base * 1e6:12.1f}us {unrolled * 1e6:9.1f}us {base / unrolled:7.2f}x")
        print(f"{name:36s} {row[0]}   {row[1]}")
    whole: dict = {way: [] for way in builds}
    models = {}
    for way, built in builds.items():
        sig = prepare(built, None)
        tensors, _ = to_device(built, sig, tuple(model_inputs(built, sig, None, 0)))
        models[way] = (relax_vm(built)[sig.name], tensors)
    for _ in range(args.rounds * 3):
        for way, (model, tensors) in models.items():
            model(*tensors)
            start = time.perf_counter()
            for _ in range(10):
                model(*tensors)
            whole[way].append((time.perf_counter() - start) / 10)
    base, unrolled = statistics.median(whole["unroll 1"]), statistics.median(whole["rule"])
    print(
        f"whole model, wall clock per call, {args.rounds * 3} rounds of 10 calls in turns: "
        f"unroll 1 {base * 1e3:.3f} ms, the rule {unrolled * 1e3:.3f} ms: {base / unrolled:.2f}x"
    )


if __name__ == "__main__":
    main()
