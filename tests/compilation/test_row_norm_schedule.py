"""The layer norm schedule: a CPU build normalises a row at a time in one parallel loop, its
reductions vectorised, and agrees with PyTorch (a residual add fused in, rows of large values,
a row that is not a multiple of the lanes)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from build_support import prim_funcs
from torch import nn

from mlc_jupyter.compilation import build_module
from mlc_jupyter.compilation.default_schedule import SCHEDULED
from mlc_jupyter.models import import_model


class ResidualNorm(nn.Module):
    """A transformer's ``norm(x + f(x))``, with the affine parameters away from 1 and 0."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)
        with torch.no_grad():
            self.norm.weight.uniform_(0.5, 2.0)
            self.norm.bias.uniform_(-1.0, 1.0)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.norm(x + y)


@pytest.mark.parametrize("width", [256, 24])
def test_a_layer_norm_agrees_with_pytorch(width):
    gen = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    x = torch.randn(2, 16, width, generator=gen) * 30 + 100  # a large mean, removed exactly
    y = torch.randn(2, 16, width, generator=gen)
    model = ResidualNorm(width).eval()
    built = build_module(import_model(model, (x, y)), persist=False)
    got = np.asarray(built(x.numpy(), y.numpy()))
    np.testing.assert_allclose(got, model(x, y).detach().numpy(), rtol=1e-4, atol=1e-4)
    assert prim_funcs(built.mod, "layer_norm")
    for func in prim_funcs(built.mod, "layer_norm").values():
        assert bool(func.attrs[SCHEDULED])


def test_rows_are_normalised_in_one_parallel_loop_with_vector_reductions():
    x = torch.randn(1, 128, 256, generator=torch.Generator().manual_seed(1))
    built = build_module(import_model(nn.LayerNorm(256).eval(), x), persist=False)
    (func,) = prim_funcs(built.mod, "layer_norm").values()
    text = func.script()
    assert text.count("T.parallel") == 1  # one wake-up of the thread pool, not one per step
    assert text.count("T.vectorized") >= 3  # the sum, the squared differences, the output
