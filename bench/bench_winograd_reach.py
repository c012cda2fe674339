"""Bench: ResNet-18's default build with Winograd's reach as the rule has it and as given, in one
process, in turns (the whole model, 2 threads, TVM's timer, median of the rounds).

``bench/bench_winograd_layers.py`` times each layer alone, its weight hot in the caches; inside
the model a batch-1 layer reads its whole transformed weight at every call, so the rule
(``compilation/winograd.py``: ``TILE_FROM``, ``MAX_WEIGHT_BYTES``) is checked here too. Each
alternative is ``F4_FROM,F2_FROM``: the smallest output that gets F(4x4, 3x3) / F(2x2, 3x3).

    python bench/bench_winograd_reach.py [--reach 28,7 14,7] [--rounds 11]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reach", nargs="*", default=["28,7", "14,7"])
    parser.add_argument("--rounds", type=int, default=11)
    args = parser.parse_args()

    import numpy as np
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from fresh_build import whole_model
    from model_support import resnet18

    from mlc_jupyter.compilation import winograd
    from mlc_jupyter.compilation.targets import describe_target, resolve_target
    from mlc_jupyter.models import import_model

    torch.manual_seed(0)
    imported = import_model(resnet18(), torch.randn(1, 3, 224, 224))
    rule = dict(winograd.TILE_FROM)
    reaches = {"the rule " + ",".join(str(rule[m]) for m in (4, 2)): rule}
    for text in args.reach:
        four, two = (int(n) for n in text.split(","))
        reaches[text] = {4: four, 2: two}
    print(f"target {describe_target(resolve_target(None))}, {args.rounds} rounds in turns")
    timers, outputs = {}, {}
    for label, reach in reaches.items():
        winograd.TILE_FROM.update(reach)
        made = whole_model(imported)
        tiles = sorted(
            str(winograd.tile_of(f)) for _, f in made.built.mod.functions_items()
            if hasattr(f, "body") and winograd.tile_of(f) is not None
        )  # fmt: skip
        outputs[label] = made.output
        timers[label] = (made.timer, made.tensors, [], " ".join(tiles))
    winograd.TILE_FROM.update(rule)
    first = next(iter(outputs.values()))
    for _ in range(args.rounds):
        for timer, tensors, taken, _ in timers.values():
            taken.append(timer(*tensors).mean)
    base = statistics.median(next(iter(timers.values()))[2])
    print(
        f"{'F(4x4),F(2x2) from':22} {'median ms':>9}  {'rule / this':>11}  Winograd kernels' tiles"
    )
    for label, (_, _, taken, tiles) in timers.items():
        median = statistics.median(taken)
        error = float(np.abs(outputs[label] - first).max())
        print(
            f"{label:22} {median * 1e3:9.3f}  {base / median:10.2f}x  {tiles}  (max diff {error:.1e})"
        )


if __name__ == "__main__":
    main()
