"""A model build as a ``torch.nn.Module`` (``to_torch``): real builds, real PyTorch tensors."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from mlc_jupyter import to_torch  # noqa: E402 - after the skip
from mlc_jupyter.compilation import build_module  # noqa: E402
from mlc_jupyter.deploy.torch_tensors import ALIGNMENT, shareable  # noqa: E402
from mlc_jupyter.errors import CallError, DeployError  # noqa: E402
from mlc_jupyter.models import import_model  # noqa: E402


def _small_model():
    torch.manual_seed(0)
    layers = (torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8))
    return torch.nn.Sequential(*layers).eval()


@pytest.fixture(scope="module")
def model():
    return _small_model()


@pytest.fixture(scope="module")
def example():
    torch.manual_seed(1)
    return torch.randn(2, 64)


@pytest.fixture(scope="module")
def module(model, example):
    return to_torch(build_module(import_model(model, example)), "mlp_lib")


def _misaligned(value):
    """A copy of ``value`` that starts 4 bytes into a fresh buffer (like ``x[1:]``)."""
    flat = torch.empty(value.numel() + 1, dtype=value.dtype)
    view = flat[1:].view(value.shape)
    view.copy_(value)
    assert view.data_ptr() % ALIGNMENT
    return view


def test_a_built_model_in_a_real_shell_becomes_a_torch_module_that_matches_pytorch(shell):
    cell = (
        "import torch\nfrom model_support import mlp\nfrom mlc_jupyter import to_torch\n"
        "model = mlp()\nimage = torch.rand(1, 784)"
    )
    assert shell.run_cell(cell).success
    assert shell.run_cell("%mlc_import model --inputs image --quiet").success
    assert shell.run_cell("%mlc_build model_relax").success
    assert shell.run_cell("tvm_model = to_torch(model_relax_lib)\nout = tvm_model(image)").success
    out = shell.user_ns["out"]
    assert isinstance(shell.user_ns["tvm_model"], torch.nn.Module)
    assert isinstance(out, torch.Tensor) and out.shape == (1, 10)
    expected = shell.user_ns["model"](shell.user_ns["image"])
    torch.testing.assert_close(out, expected, rtol=1e-4, atol=1e-4)


def test_aligned_inputs_are_shared_and_misaligned_or_strided_ones_copied_aligned(example):
    assert shareable(example).data_ptr() == example.data_ptr()  # no copy
    misaligned = _misaligned(example)
    copy = shareable(misaligned)
    assert copy.data_ptr() != misaligned.data_ptr() and copy.data_ptr() % ALIGNMENT == 0
    torch.testing.assert_close(copy, example)
    strided = example.t().contiguous().t()
    assert shareable(strided).is_contiguous()


def test_forward_gives_the_right_answer_for_misaligned_and_strided_inputs(module, model, example):
    expected = model(example)
    torch.testing.assert_close(module(_misaligned(example)), expected, rtol=1e-5, atol=1e-5)
    strided = example.t().contiguous().t()
    torch.testing.assert_close(module(strided), expected, rtol=1e-5, atol=1e-5)
    needs_grad = example.clone().requires_grad_(True)
    torch.testing.assert_close(module(needs_grad), expected, rtol=1e-5, atol=1e-5)


def test_each_call_returns_its_own_output_tensor(module, model, example):
    first = module(example)
    second = module(example * 2)
    assert first.data_ptr() != second.data_ptr()
    torch.testing.assert_close(first, model(example), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(second, model(example * 2), rtol=1e-5, atol=1e-5)


def test_an_input_that_requires_grad_gives_an_output_whose_backward_says_why_not(module, example):
    x = example.clone().requires_grad_()
    out = module(x)
    assert out.requires_grad  # as the PyTorch model's would
    with pytest.raises(DeployError, match="is for inference: no gradient flows through it"):
        out.sum().backward()
    with torch.no_grad():
        assert not module(x).requires_grad
    assert not module(example).requires_grad  # nothing requires grad: a plain output


def test_weights_kept_as_inputs_are_the_modules_parameters_and_can_be_loaded(model, example):
    module = to_torch(build_module(import_model(model, example, params="inputs")))
    assert [name for name, _ in module.named_parameters()] == [
        "p_0_weight", "p_0_bias", "p_2_weight", "p_2_bias",
    ]  # fmt: skip
    torch.testing.assert_close(module(example), model(example), rtol=1e-5, atol=1e-5)
    other = _small_model()
    with torch.no_grad():
        other[2].bias.add_(1.0)
    state = dict(zip(module.state_dict(), other.state_dict().values(), strict=True))
    module.load_state_dict(state)
    torch.testing.assert_close(module(example), other(example), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (lambda x: (torch.randn(3, 64),), "argument 'input' has shape (3, 64), expected"),
        (lambda x: (x.double(),), "argument 'input' has dtype float64, expected"),
        (lambda x: (x, x), "forward takes 1 input(s) (input: (2, 64) float32); got 2"),
        (lambda x: (x.numpy(),), "input 'input' is a ndarray, not a torch.Tensor"),
        (lambda x: (x.to("meta"),), "input 'input' is on meta, but the model was built for llvm"),
    ],
)
def test_wrong_inputs_get_a_clear_error(module, example, args, message):
    with pytest.raises(CallError) as info:
        module(*args(example))
    assert message in str(info.value)


def test_a_model_that_is_not_built_or_a_kernel_build_is_refused_with_a_hint(model, example):
    imported = import_model(model, example)
    with pytest.raises(DeployError, match="mlp_relax is not built") as info:
        to_torch(imported, "mlp_relax")
    assert "%mlc_build mlp_relax" in info.value.hint
    from build_support import matmul

    with pytest.raises(DeployError, match="is a TensorIR kernel build"):
        to_torch(build_module(matmul(8)), "mm_lib")
    with pytest.raises(DeployError, match="is a str, not a model build"):
        to_torch("resnet")
