"""Bench: how the default build splits a matmul-like kernel between the cores, on whole models.

:func:`mlc_jupyter.compilation.matmul_schedule.rule_tile` gives the parallel jobs to the axis of
the larger operand: the columns of the weight, or the rows of ``A`` where there are more rows than
columns (MobileNet's 1x1 convolutions over 112x112 to 28x28 images). This builds each model twice
by the default build, with that rule and with the columns always first (the rule before), and
times the two whole models in turns in one process, so a busy machine slows both alike. A model
whose builds come out the same (no kernel with more rows than columns) says so.

    python bench/bench_parallel_split.py [--models mobilenet resnet18 encoder] [--rounds 21]
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import time

#: Model calls per sample: a sample is long enough for the clock, short enough to alternate.
CALLS = 20


def build_both(name: str) -> tuple[object, object]:
    """The default build of ``name`` with the rule as it is and with the columns always first."""
    from bench_models import build_model  # the models and inputs of the race

    from mlc_jupyter.compilation import build_module, matmul_schedule
    from mlc_jupyter.compilation.default_schedule import forget_prepared
    from mlc_jupyter.models import import_model

    model, example = build_model(name)
    imported = import_model(model, example)
    larger = build_module(imported, persist=False)
    rule = matmul_schedule.rule_tile
    matmul_schedule.rule_tile = functools.partial(rule, split="columns")
    try:
        forget_prepared()
        columns = build_module(imported, persist=False, force=True)
    finally:
        matmul_schedule.rule_tile = rule
        forget_prepared()
    return larger, columns


def whole_model(built: object) -> tuple[object, tuple]:
    from mlc_jupyter.compilation.call import prepare, relax_vm, to_device
    from mlc_jupyter.measure.timer import model_inputs

    sig = prepare(built, None)
    tensors, _ = to_device(built, sig, tuple(model_inputs(built, sig, None, 0)))
    return relax_vm(built)[sig.name], tensors


def race(name: str, rounds: int) -> None:
    larger, columns = build_both(name)
    if larger.key == columns.key:
        print(f"{name}: the same build both ways (no kernel with more rows than columns)")
        return
    calls = {"larger operand": whole_model(larger), "columns first": whole_model(columns)}
    for main, tensors in calls.values():
        for _ in range(CALLS):
            main(*tensors)
    samples: dict[str, list[float]] = {k: [] for k in calls}
    for _ in range(rounds):
        for way, (main, tensors) in calls.items():
            start = time.perf_counter()
            for _ in range(CALLS):
                main(*tensors)
            samples[way].append((time.perf_counter() - start) / CALLS)
    medians = {k: statistics.median(v) for k, v in samples.items()}
    for way, seconds in medians.items():
        spread = (max(samples[way]) - min(samples[way])) / seconds / 2
        print(f"{name}: {way:15s} {seconds * 1e3:7.3f} ms  ±{spread:.0%}  ({rounds} rounds)")
    ratio = medians["columns first"] / medians["larger operand"]
    print(f"{name}: the larger operand's split is {ratio:.3f}x the columns-first split")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["mobilenet", "resnet18", "encoder"])
    parser.add_argument("--rounds", type=int, default=21)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}")
    for name in args.models:
        race(name, args.rounds)


if __name__ == "__main__":
    main()
