"""PyTorch models into Relax: what the import says about them, and short errors when it fails."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from model_support import mlp

from mlc_jupyter.compilation import build_module
from mlc_jupyter.errors import ModelImportError
from mlc_jupyter.models import import_model
from mlc_jupyter.results import ImportedModel

X = torch.randn(1, 784)
MLP_WEIGHTS = 784 * 128 + 128 + 128 * 10 + 10


class Bessel(torch.nn.Module):
    """A model using an operator TVM's importers do not translate."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x):
        y = self.linear(x)
        z = torch.special.bessel_j0(y)
        return z + 1


class DataDependent(torch.nn.Module):
    """Control flow on a tensor's value, which torch.export cannot capture."""

    def forward(self, x):
        if x.sum() > 0:
            return x * 2
        return x


def _expected(model, x):
    with torch.no_grad():
        return model(x).numpy()


def test_the_book_mlp_imports_with_its_operators_weights_and_kernels():
    model = mlp()
    imported = import_model(model, X)
    assert isinstance(imported, ImportedModel) and imported.model is model
    summary = imported.summary
    assert dict(summary.ops) == {"matmul": 2, "add": 2, "permute_dims": 2, "nn.relu": 1}
    assert summary.n_params == MLP_WEIGHTS and summary.param_bytes == 4 * MLP_WEIGHTS
    assert len(summary.kernels) == 2 and all(calls == 1 for _, calls in summary.kernels)
    assert summary.inputs == ("(1, 784) float32",) and summary.outputs == ("(1, 10) float32",)
    assert [stage for stage, _ in imported.stages][:2] == ["torch.export", "translate"]
    out = build_module(imported)(X.numpy())
    np.testing.assert_allclose(out, _expected(model, X), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("via", ["export", "fx"])
def test_weights_kept_as_inputs_follow_the_image_in_main_and_in_the_example(via):
    model = mlp()
    imported = import_model(model, X, via=via, params="inputs")
    assert len(imported.mod["main"].params) == 5 and len(imported.example_args) == 5
    assert imported.summary.n_params == MLP_WEIGHTS
    out = build_module(imported)(*imported.example_args)
    np.testing.assert_allclose(out, _expected(model, X), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("via", ["export", "fx"])
def test_an_operator_tvm_lacks_is_named_with_the_model_line_that_uses_it(via):
    with pytest.raises(ModelImportError) as info:
        import_model(Bessel().eval(), torch.randn(2, 8), via=via)
    message = str(info.value)
    assert "bessel_j0" in message
    assert "z = torch.special.bessel_j0(y)" in message
    assert "test_importer.py:" in message and "in forward" in message
    assert len(info.value.render_lines()) == 2  # the message and a hint, no traceback


def test_a_model_torch_export_cannot_capture_gets_one_line_and_a_hint():
    with pytest.raises(ModelImportError, match=r"torch\.export could not capture") as info:
        import_model(DataDependent(), torch.randn(4))
    assert "--via fx" in info.value.hint
    assert "\n" not in str(info.value)


def test_a_model_in_training_mode_is_imported_with_a_warning():
    model = mlp().train()
    imported = import_model(model, X)
    assert any("training mode" in w for w in imported.warnings)


def test_something_that_is_not_a_pytorch_model_is_refused():
    with pytest.raises(ModelImportError, match=r"expected a torch\.nn\.Module"):
        import_model(lambda x: x, X)


class WarnsOnInput(torch.nn.Module):
    """A model whose own code warns (a warning the user must see)."""

    def forward(self, x):
        warnings.warn("check the model's input", UserWarning, stacklevel=1)
        return x * 2


def test_the_import_shows_the_models_warnings_and_not_pytorchs_own_deprecations():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import_model(WarnsOnInput(), torch.ones(4))
    messages = [str(w.message) for w in caught]
    assert "check the model's input" in messages
    assert not [m for m in messages if "LeafSpec" in m], messages  # from TVM's decompositions
