"""The softmax schedule: a CPU build computes each row's exponentials once, vectorised, in rows
that run in parallel, and agrees with PyTorch (masked entries, large logits, a fused scale)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from build_support import prim_funcs
from torch import nn

from mlc_jupyter.compilation import build_module
from mlc_jupyter.compilation.default_schedule import SCHEDULED
from mlc_jupyter.models import import_model


class ScaledMaskedSoftmax(nn.Module):
    """Attention's softmax: scaled scores, masked positions at minus infinity."""

    def forward(self, scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return torch.softmax(scores.masked_fill(mask, float("-inf")) * 0.125, dim=-1)


@pytest.mark.parametrize("columns", [64, 13])
def test_a_softmax_agrees_with_pytorch_for_large_and_masked_logits(columns):
    gen = torch.Generator().manual_seed(0)
    scores = torch.randn(2, 4, 16, columns, generator=gen) * 60  # exp would overflow unshifted
    mask = torch.rand(2, 4, 16, columns, generator=gen) < 0.3
    mask[..., 0] = False  # every row keeps one entry
    model = ScaledMaskedSoftmax().eval()
    built = build_module(import_model(model, (scores, mask)), persist=False)
    got = np.asarray(built(scores.numpy(), mask.numpy()))
    expected = model(scores, mask).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-7)
    assert (got[mask.numpy()] < 1e-30).all()  # a masked entry has no weight
    assert prim_funcs(built.mod, "softmax")  # the kernel was built and scheduled
    for func in prim_funcs(built.mod, "softmax").values():
        assert bool(func.attrs[SCHEDULED])


def test_each_exponential_is_computed_once_in_parallel_vectorised_rows():
    scores = torch.randn(1, 4, 32, 128, generator=torch.Generator().manual_seed(1))
    mask = torch.zeros(1, 4, 32, 128, dtype=torch.bool)
    built = build_module(import_model(ScaledMaskedSoftmax().eval(), (scores, mask)), persist=False)
    (func,) = prim_funcs(built.mod, "softmax").values()
    text = func.script()
    # the exponentials are a block of their own, stored once and read by the sum and the output
    assert text.count('T.sblock("T_fast_exp")') == 1
    assert "T.exp(" not in text  # libm's exp is a call per lane; the polynomial vectorises
    assert "T.parallel" in text
    assert text.count("T.vectorized") >= 4  # maximum, exponentials, sum, output
