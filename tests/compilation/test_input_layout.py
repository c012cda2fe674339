"""A CNN's first convolution reads the NCHW input itself: no transpose kernel before it, the
same outputs as PyTorch, and the transpose kept where something else needs it."""

from __future__ import annotations

import re

import numpy as np
import torch
from torch import nn

from mlc_jupyter.compilation import build_module
from mlc_jupyter.models import import_model


def _built(model: nn.Module, x: torch.Tensor):
    model = model.eval()
    built = build_module(import_model(model, x), persist=False)
    with torch.no_grad():
        expected = model(x)
    expected = expected if isinstance(expected, tuple) else (expected,)
    got = built(x.numpy())
    got = got if isinstance(got, (tuple, list)) else (got,)
    for out, ref in zip(got, expected, strict=True):
        np.testing.assert_allclose(np.asarray(out), ref.numpy(), rtol=1e-4, atol=1e-4)
    return built


def _called(built) -> list[str]:
    """The kernels the model's ``main`` calls, in order."""
    return re.findall(r"R\.call_tir\((\w+),", built.mod["main"].script(show_meta=False))


def _image(channels: int = 3, size: int = 32) -> torch.Tensor:
    return torch.randn(1, channels, size, size, generator=torch.Generator().manual_seed(0))


def test_the_stem_convolution_reads_the_nchw_image_into_its_padded_copy():
    torch.manual_seed(0)
    stem = nn.Sequential(  # a CNN's stem and head: the head's mean is over NHWC, a view after
        nn.Conv2d(3, 16, 7, stride=2, padding=3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten()
    )
    built = _built(stem, _image())
    name = _called(built)[0]  # the first kernel
    assert "conv2d" in name
    text = built.mod[name].script()
    # the image parameter is NCHW and the padded copy reads it channel-first
    assert "T.Buffer((T.int64(1), T.int64(3), T.int64(32), T.int64(32))" in text, text
    assert "pad_temp" in text and "T_transpose" not in text, text
    # the padded copy runs its rows in parallel and unrolls the three channels
    assert "T.unroll(T.int64(3))" in text, text


def test_two_convolutions_of_one_input_both_read_it_and_a_depthwise_one_too():
    class TwoHeads(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = nn.Conv2d(3, 8, 3, stride=2, padding=1)
            self.b = nn.Conv2d(3, 3, 3, padding=1, groups=3)

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return torch.relu(self.a(x)), self.b(x)

    torch.manual_seed(0)
    called = _called(_built(TwoHeads(), _image()))
    # each convolution reads the input (no transpose before the first kernel); a transpose
    # after each turns its output back into NCHW
    assert "conv2d" in called[0] and sorted("conv2d" in n for n in called) == [0, 0, 1, 1], called


def test_an_input_that_other_operators_also_read_keeps_its_transpose_for_them():
    class Mixed(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.conv(x) + x.mean(dim=1, keepdim=True)

    torch.manual_seed(0)
    _built(Mixed(), _image())


def test_a_first_convolution_that_becomes_winograd_keeps_its_nhwc_input():
    torch.manual_seed(0)
    layer = nn.Sequential(nn.Conv2d(64, 64, 3, padding=1), nn.ReLU())
    called = _called(_built(layer, _image(64, 56)))
    assert "transpose" in called[0] and "winograd" in called[1], called
