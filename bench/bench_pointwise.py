"""Bench: MobileNet's 1x1 (pointwise) convolutions against the same products as matmuls, in turns.

A 1x1 stride-1 NHWC convolution is a ``[H*W, Cin] x [Cin, Cout]`` matrix product. This builds each
of MobileNet v1's pointwise shapes twice through the default build, as ``Conv2d + ReLU`` (the
direct-convolution schedule, :mod:`mlc_jupyter.compilation.conv_schedule`) and as
``relu(x @ w + b)`` (the BLIS micro-kernel, :mod:`mlc_jupyter.compilation.matmul_schedule`), and
times the kernels alone, every kernel once per round, so that a busy machine slows both alike.
Since the default build legalises a 1x1 convolution as a matmul (:mod:`mlc_jupyter.compilation.pointwise`),
the convolution's row is the same micro-kernel over the NHWC pixels; the direct convolution's figures
before that are in ``bench/results/bench_pointwise_2026-11-29_zen3_quiet.txt``.

    python bench/bench_pointwise.py [--threads 2] [--rounds 11]
"""

from __future__ import annotations

import argparse
import os
import statistics

#: (height = width, input channels, output channels) of MobileNet v1's pointwise convolutions.
SHAPES = ((112, 32, 64), (56, 64, 128), (56, 128, 128), (14, 512, 512))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--rounds", type=int, default=11)
    args = parser.parse_args()
    os.environ["TVM_NUM_THREADS"] = str(args.threads)

    import numpy as np
    import torch

    from mlc_jupyter.compilation import build_module
    from mlc_jupyter.models import import_model
    from mlc_jupyter.tvm_compat import ir_module_type, param_buffers, prim_func_type, tvm

    class Product(torch.nn.Module):
        def __init__(self, cin: int, cout: int) -> None:
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(cin, cout))
            self.b = torch.nn.Parameter(torch.randn(cout))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.relu(x @ self.w + self.b)

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    _tvm = tvm()
    device = _tvm.cpu()
    rng = np.random.default_rng(0)
    kernels = {}
    for hw, cin, cout in SHAPES:
        conv = torch.nn.Sequential(torch.nn.Conv2d(cin, cout, 1), torch.nn.ReLU()).eval()
        as_conv = (conv, torch.randn(1, cin, hw, hw))
        as_matmul = (Product(cin, cout).eval(), torch.randn(hw * hw, cin))
        for kind, (model, example) in (("conv", as_conv), ("matmul", as_matmul)):
            built = build_module(import_model(model, example))
            for gv, func in built.mod.functions_items():
                name = gv.name_hint
                if not isinstance(func, prim_func_type()) or kind not in name:
                    continue
                module = ir_module_type()({"main": func.with_attr("global_symbol", "main")})
                lib = _tvm.compile(module, built.target)
                tensors = [
                    _tvm.runtime.tensor(
                        rng.random([int(s) for s in b.shape]).astype(str(b.dtype)), device
                    )
                    for b in param_buffers(func)
                ]
                timer = lib.mod.time_evaluator("main", device, number=5, repeat=1, min_repeat_ms=20)
                label = f"{hw}x{hw} {cin}->{cout} {kind} ({name})"
                kernels[label] = (timer, tensors, lib, 2 * hw * hw * cin * cout)
    samples: dict[str, list[float]] = {label: [] for label in kernels}
    start_load = os.getloadavg()[0]
    for _ in range(args.rounds):
        for label, (timer, tensors, _lib, _flops) in kernels.items():
            samples[label].append(timer(*tensors).results[0])
    print(
        f"pointwise shapes, each kernel alone, {args.threads} thread(s), {args.rounds} rounds in "
        f"turns; load {start_load:.2f} before, {os.getloadavg()[0]:.2f} after"
    )
    medians = {label: statistics.median(secs) for label, secs in samples.items()}
    for label, secs in samples.items():
        gflops = kernels[label][3] / medians[label] / 1e9
        print(
            f"{label:58s} median {medians[label] * 1e6:8.1f} us  min {min(secs) * 1e6:8.1f} us"
            f"  {gflops:6.1f} GFLOP/s"
        )
    labels = list(medians)
    for conv_label, matmul_label in zip(labels[::2], labels[1::2], strict=True):
        ratio = medians[conv_label] / medians[matmul_label]
        print(f"{conv_label.split(' conv')[0]:20s} conv / matmul time {ratio:5.2f}")


if __name__ == "__main__":
    main()
