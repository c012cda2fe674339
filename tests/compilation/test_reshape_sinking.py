"""An activation between reshapes that undo each other fuses into the dense layer before it."""

from __future__ import annotations

import numpy as np
import torch
from model_support import torch_seed

from mlc_jupyter.compilation import build_module
from mlc_jupyter.compilation.reshape_sinking import sink_reshapes
from mlc_jupyter.models import import_model
from mlc_jupyter.tvm_compat import prim_func_type


class FeedForward(torch.nn.Module):
    """A transformer's feed-forward block on a (batch, tokens, features) input."""

    def __init__(self) -> None:
        super().__init__()
        self.up = torch.nn.Linear(32, 64)
        self.down = torch.nn.Linear(64, 32)

    def forward(self, x):
        return self.down(torch.nn.functional.gelu(self.up(x)))


def _ops(mod):
    return [line for line in mod["main"].script().splitlines() if "R.reshape" in line]


def test_the_activations_of_a_feed_forward_block_fuse_into_its_dense_layers():
    torch_seed()
    model = FeedForward().eval()
    x = torch.randn(1, 8, 32)
    imported = import_model(model, x)
    assert len(_ops(sink_reshapes(imported.mod))) < len(_ops(imported.mod))
    built = build_module(imported, persist=False)
    names = [
        gv.name_hint for gv, f in built.mod.functions_items() if isinstance(f, prim_func_type())
    ]
    assert any("matmul" in n and "gelu" in n for n in names), names
    assert not any(n.startswith("fused_reshape") and "relu" in n for n in names), names
    with torch.no_grad():
        expected = model(x).numpy()
    np.testing.assert_allclose(built(x.numpy()), expected, rtol=1e-4, atol=1e-5)


def test_a_reshape_that_changes_the_shape_keeps_the_activation_where_it_was():
    class Flatten(torch.nn.Module):
        def forward(self, x):
            return x.reshape(4, 8).relu().reshape(2, 16)

    x = torch.randn(32)
    imported = import_model(Flatten().eval(), x)
    assert _ops(sink_reshapes(imported.mod)) == _ops(imported.mod)
    np.testing.assert_allclose(
        build_module(imported, persist=False)(x.numpy()), Flatten()(x).numpy()
    )
