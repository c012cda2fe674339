"""A clip (ReLU6, hardtanh) between convolutions keeps the CPU build's NHWC layout: no transpose
kernels around it, the clip fused into the convolution before it, and PyTorch's outputs."""

from __future__ import annotations

import numpy as np
import torch
from build_support import prim_funcs
from model_support import torch_seed
from torch import nn

from mlc_jupyter.compilation import build_module
from mlc_jupyter.compilation.clip_layout import clip_as_min_max
from mlc_jupyter.models import import_model


def test_relu6_and_hardtanh_between_convolutions_add_no_layout_kernels():
    torch_seed()
    model = nn.Sequential(
        nn.Conv2d(16, 16, 3, padding=1, groups=16),
        nn.ReLU6(),
        nn.Conv2d(16, 32, 1),
        nn.Hardtanh(-1.0, 1.0),
        nn.Conv2d(32, 32, 3, padding=1, groups=32),
    ).eval()
    # inputs large enough that both bounds of each clip are reached
    x = 4 * torch.randn(1, 16, 12, 12, generator=torch.Generator().manual_seed(5))
    built = build_module(import_model(model, x), persist=False)
    kernels = list(prim_funcs(built.mod))
    # the output's transpose back to NCHW is the only layout kernel; each clip is in the
    # write-back of the convolution before it
    assert [n for n in kernels if "transpose" in n] == ["transpose"], kernels
    assert len([n for n in kernels if "conv2d" in n and "minimum" in n]) == 2, kernels
    with torch.no_grad():
        hidden = model[:2](x)
        expected = model(x).numpy()
    assert float(hidden.max()) == 6.0 and float(hidden.min()) == 0.0
    np.testing.assert_allclose(np.asarray(built(x.numpy())), expected, rtol=1e-4, atol=1e-4)


def test_a_clip_of_integers_is_left_as_it_is():
    torch_seed()

    class Clamp(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.clamp(x, 0, 6)

    mod = import_model(Clamp(), torch.arange(-5, 12, dtype=torch.int32)).mod
    assert "R.clip" in clip_as_min_max(mod)["main"].script()
