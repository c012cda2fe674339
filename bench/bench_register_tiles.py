"""Bench: whole models lowered with TVM's default TIR pipeline and with register tiles kept on
the stack (:func:`mlc_jupyter.tvm_compat.register_tiles_pipeline`), in one process, in turns.

TVM gives a CPU kernel's ``local`` buffer (a register tile's accumulators) a heap workspace at
every tile; the project's lowering keeps it an ``alloca``, which LLVM promotes to registers. Each
model's default build is made with each lowering (same schedules), its output compared, and the
whole model timed in turns with TVM's timer (median of the rounds).

    python bench/bench_register_tiles.py [--models resnet18 mobilenet encoder] [--rounds 11]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", default=["resnet18", "mobilenet", "encoder"])
    parser.add_argument("--rounds", type=int, default=11)
    args = parser.parse_args()

    import numpy as np
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from fresh_build import whole_model
    from model_support import encoder_layer, mobilenet_v1, resnet18

    from mlc_jupyter.compilation import cached_build
    from mlc_jupyter.compilation.targets import describe_target, resolve_target
    from mlc_jupyter.models import import_model

    models = {
        "resnet18": (resnet18, (1, 3, 224, 224)),
        "mobilenet": (mobilenet_v1, (1, 3, 224, 224)),
        "encoder": (encoder_layer, (1, 128, 256)),
    }
    lowerings = {"TVM default": lambda target: None, "register tiles": cached_build.tir_pipeline}
    print(f"target {describe_target(resolve_target(None))}, {args.rounds} rounds in turns")
    for name in args.models:
        make, shape = models[name]
        torch.manual_seed(0)
        imported = import_model(make(), torch.randn(*shape))
        timers, outputs = {}, {}
        for label, lowering in lowerings.items():
            cached_build.tir_pipeline = lowering
            made = whole_model(imported)
            outputs[label] = made.output
            timers[label] = (made.timer, made.tensors, [])
        cached_build.tir_pipeline = lowerings["register tiles"]
        first, second = outputs.values()
        print(f"{name}: outputs differ by at most {float(np.abs(first - second).max()):.1e}")
        for _ in range(args.rounds):
            for timer, tensors, taken in timers.values():
                taken.append(timer(*tensors).mean)
        base = statistics.median(timers["TVM default"][2])
        for label, (_, _, taken) in timers.items():
            median = statistics.median(taken)
            print(f"  {label:15} {median * 1e3:7.3f} ms  ({base / median:.2f}x)")


if __name__ == "__main__":
    main()
