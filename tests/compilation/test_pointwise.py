"""1x1 convolutions built as matrix products: which convolutions become one, the matmul
micro-kernel over all the image's pixels (its tiles cross image rows), PyTorch's outputs, and the
tuner searching them in the matmul space."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from build_support import prim_funcs
from model_support import torch_seed
from torch import nn

from mlc_jupyter.compilation import build_module, pointwise
from mlc_jupyter.compilation.default_schedule import legalize_and_fuse
from mlc_jupyter.compilation.targets import resolve_target
from mlc_jupyter.models import import_model
from mlc_jupyter.tune.spaces.matmul import is_matmul_like
from mlc_jupyter.tvm_compat import ir_module_type


def _pointwise_layer() -> nn.Module:
    """The pointwise convolution with batch norm and ReLU between two depthwise ones (a model's
    first convolution reads the NCHW input itself, and the last one's epilogue joins the output's
    transpose)."""
    torch_seed()
    layer = nn.Sequential(
        nn.Conv2d(32, 32, 3, padding=1, groups=32),
        nn.Conv2d(32, 64, 1),
        nn.BatchNorm2d(64),
        nn.ReLU(),
        nn.Conv2d(64, 64, 3, padding=1, groups=64),
    ).eval()
    with torch.no_grad():  # statistics that are not the identity, so the folding shows
        layer[2].running_mean.uniform_(-1, 1)
        layer[2].running_var.uniform_(0.5, 2)
    return layer


@pytest.mark.parametrize(("size", "batch"), [(14, 1), (7, 4)])
def test_a_pointwise_convolution_runs_on_the_matmul_micro_kernel_with_pytorch_s_outputs(
    size, batch
):
    # 14 and 7 pixels a row: the micro-kernel's rows (4 or 7) cross from one image row to the
    # next, and with four images of 49 pixels from one image to the next
    model = _pointwise_layer()
    x = torch.randn(batch, 32, size, size, generator=torch.Generator().manual_seed(2))
    built = build_module(import_model(model, x), persist=False)
    kernels = prim_funcs(built.mod)
    (name,) = [n for n in kernels if pointwise.NAME in n]
    text = kernels[name].script()
    # the accumulators are indexed by the pixel across rows and images: [pixels, channels]
    assert re.search(
        rf"alloc_buffer\(\(T\.int64\({batch * size * size}\), T\.int64\(64\)\), scope=\"local\"",
        text,
    ), text
    assert "T.parallel" in text and "T.vectorized" in text
    assert "T.max" in text  # the ReLU in the write-back, no kernel of its own
    assert not [n for n in kernels if "relu" in n and pointwise.NAME not in n], list(kernels)
    with torch.no_grad():
        expected = model(x).numpy()
    np.testing.assert_allclose(np.asarray(built(x.numpy())), expected, rtol=1e-4, atol=1e-4)


def test_only_ungrouped_stride_one_1x1_convolutions_whose_channels_fill_vectors_become_products():
    torch_seed()
    model = nn.Sequential(
        nn.Conv2d(16, 16, 1, stride=2),  # strided: a direct convolution
        nn.Conv2d(16, 16, 1, groups=2),  # grouped
        nn.Conv2d(16, 12, 1),  # 12 output channels fill no vector
        nn.Conv2d(12, 16, 3, padding=1),  # 3x3
        nn.Conv2d(16, 16, 1),  # the one pointwise convolution
    ).eval()
    x = torch.randn(1, 16, 16, 16, generator=torch.Generator().manual_seed(3))
    built = build_module(import_model(model, x), persist=False)
    kernels = prim_funcs(built.mod)
    assert len([n for n in kernels if pointwise.NAME in n]) == 1, list(kernels)
    assert len([n for n in kernels if "conv2d" in n and pointwise.NAME not in n]) >= 3
    with torch.no_grad():
        expected = model(x).numpy()
    np.testing.assert_allclose(np.asarray(built(x.numpy())), expected, rtol=1e-4, atol=1e-4)


def test_the_tuner_searches_a_pointwise_kernel_in_the_matmul_space():
    model = _pointwise_layer()
    target = resolve_target()
    fused = legalize_and_fuse(import_model(model, torch.zeros(1, 32, 14, 14)).mod, target)
    (func,) = [f for name, f in prim_funcs(fused).items() if pointwise.NAME in name]
    task = ir_module_type()({"main": func.with_attr("global_symbol", "main")})
    assert is_matmul_like(task, target)
