"""Bench: 1x1 convolutions over small images with their pixels split between the cores, or their
columns, in one process, in turns.

The default rule (:func:`mlc_jupyter.compilation.matmul_schedule.rule_tile`) splits a 1x1
convolution's pixels between the cores where one core's L2 holds the whole weight twice over and
the pixels fall into tiles the jobs share evenly (MobileNet's 14x14 layers); without the L2's
size it splits the columns. Each case is built both ways (the L2 hidden from the rule for the
second), its outputs compared, and timed in windows, in turns:

* MobileNet v1 whole (the depthwise kernels around each 1x1 product split their rows);
* one depthwise kernel and the 1x1 product after it, over a 14x14 image (:data:`PAIRS`): what
  the split buys or costs with no kernel after the product.

    python bench/bench_row_split.py [--windows 16]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

#: A depthwise kernel and a 1x1 product over a 14x14 image: (input channels, output channels).
PAIRS = ((256, 512), (512, 512))


def _runner(model: object, example: object, split: str) -> tuple[object, list[object], object]:
    """The default build of ``model`` with the pixels (``split="pixels"``) or the columns split,
    its timer, its inputs and its output."""
    from mlc_jupyter.compilation import build_module, default_schedule, device_for
    from mlc_jupyter.compilation.call import prepare, relax_vm, to_device
    from mlc_jupyter.compilation.default_schedule import forget_prepared
    from mlc_jupyter.measure.profile import model_inputs
    from mlc_jupyter.models import import_model

    real = default_schedule.core_cache_bytes
    if split == "columns":
        default_schedule.core_cache_bytes = lambda target: None
    try:
        forget_prepared()
        built = build_module(import_model(model, example), force=True, persist=False)
    finally:
        default_schedule.core_cache_bytes = real
    sig = prepare(built, None)
    inputs = model_inputs(built, sig, [example.numpy()], 0)
    tensors, _ = to_device(built, sig, tuple(inputs))
    output = relax_vm(built)[sig.name](*tensors)
    timer = relax_vm(built).time_evaluator(sig.name, device_for(built.target), number=20, repeat=1)
    return timer, tensors, output


def _race(name: str, model: object, example: object, windows: int) -> None:
    import numpy as np

    runs = {split: _runner(model, example, split) for split in ("pixels", "columns")}
    outputs = [np.asarray(r[2].numpy()) for r in runs.values()]
    assert np.allclose(outputs[0], outputs[1], rtol=1e-5, atol=1e-5), "the two builds disagree"
    samples: dict[str, list[float]] = {split: [] for split in runs}
    for _ in range(windows):
        for split, (timer, tensors, _) in runs.items():
            samples[split].append(timer(*tensors).mean)
    pixels, columns = samples["pixels"], samples["columns"]
    ratio = statistics.median(c / p for c, p in zip(columns, pixels, strict=True))
    print(
        f"{name:28s} pixels split {statistics.median(pixels) * 1e3:7.3f} ms"
        f"  columns split {statistics.median(columns) * 1e3:7.3f} ms"
        f"  columns/pixels per window {ratio:5.3f}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", type=int, default=16)
    args = parser.parse_args()
    os.environ.setdefault("TVM_NUM_THREADS", "2")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    import torch
    from model_support import mobilenet_v1, torch_seed

    from mlc_jupyter.compilation import resolve_target
    from mlc_jupyter.compilation.targets import core_cache_bytes

    torch.set_num_threads(2)
    l2 = core_cache_bytes(resolve_target("llvm"))
    print(f"one core's L2: {l2} bytes; load {os.getloadavg()[0]:.2f}; {args.windows} windows")
    if not l2:
        print("this machine does not say its L2's size: the rule splits the columns either way")
        return
    _race("MobileNet v1", mobilenet_v1(), torch.randn(1, 3, 224, 224), args.windows)

    for cin, cout in PAIRS:
        torch_seed()
        model = torch.nn.Sequential(
            torch.nn.Conv2d(cin, cin, 3, 1, 1, groups=cin), torch.nn.ReLU(),
            torch.nn.Conv2d(cin, cout, 1), torch.nn.ReLU(),
        ).eval()  # fmt: skip
        _race(f"14x14 dw + 1x1 {cin}->{cout}", model, torch.randn(1, cin, 14, 14), args.windows)
    print(f"load after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
