"""A model build as a ``torch.nn.Module``: PyTorch tensors in and out, memory shared.

``forward`` checks its arguments against the build's signature (count, device, dtype, shape),
hands them to the Relax VM through DLPack (:mod:`.torch_tensors`: no copy unless a tensor is
misaligned or not contiguous) and returns PyTorch tensors over the memory TVM wrote. A model
imported with ``--params inputs`` takes its weights as arguments of ``main``: the module holds
them as (frozen) parameters, so ``state_dict()`` and ``load_state_dict`` work on them.
The module is for inference: an output requires grad where eager's would, and its backward is
an error that says so.
"""

from __future__ import annotations

import re
from typing import Any

import torch

from ..compilation import describe_target, device_kind
from ..compilation.cached_build import Built
from ..compilation.call import check_argument, prepare, runtime_function
from ..errors import CallError
from .built import model_build, model_inputs
from .torch_tensors import as_eager_returns, as_torch, check_device, shareable

#: Why a backward through the module fails.
INFERENCE_ONLY = (
    "a TVM model build is for inference: no gradient flows through it; compute gradients with "
    "the PyTorch model, and call this one under torch.no_grad()"
)


class TVMModule(torch.nn.Module):
    """A TVM model build called like a PyTorch module (``to_torch(resnet_relax_lib)``)."""

    def __init__(self, built: Built) -> None:
        super().__init__()
        self.built = built
        self.signature = prepare(built, "main")
        self._main = runtime_function(built, "main")
        self.target_kind = str(built.target.kind.name)
        self.device_type = device_kind(built.target)  # PyTorch's name for it too
        n_inputs = model_inputs(built, self.signature)
        self.inputs = self.signature.params[:n_inputs]
        self._weight_names: list[str] = []
        weights = _weights(built, n_inputs)
        for param, value in zip(self.signature.params[n_inputs:], weights, strict=True):
            attr = _attribute_name(param.name, self._weight_names)
            tensor = torch.from_numpy(value.copy()).to(self.device_type)
            self.register_parameter(attr, torch.nn.Parameter(tensor, requires_grad=False))
            self._weight_names.append(attr)

    def forward(self, *inputs: torch.Tensor) -> Any:
        """The model on ``inputs``: a tensor, or a tuple of tensors for several outputs."""
        if len(inputs) != len(self.inputs):
            wanted = ", ".join(p.describe() for p in self.inputs)
            raise CallError(
                f"forward takes {len(self.inputs)} input(s) ({wanted}); got {len(inputs)}"
            )
        args = []
        for index, value in enumerate(inputs):
            param = self.inputs[index]
            if not isinstance(value, torch.Tensor):
                raise CallError(
                    f"forward: input {param.name!r} is a {type(value).__name__}, not a "
                    f"torch.Tensor (expected {param.describe()})"
                )
            check_device(value, f"input {param.name!r}", self.device_type, self.target_kind)
            check_argument(self.signature, index, value)
            args.append(shareable(value))
        args += [shareable(getattr(self, name)) for name in self._weight_names]
        out = as_torch(self._main(*args))
        outs = as_eager_returns(out if isinstance(out, tuple) else (out,), inputs, INFERENCE_ONLY)
        return outs if isinstance(out, tuple) else outs[0]

    def extra_repr(self) -> str:
        inputs = ", ".join(p.describe() for p in self.inputs)
        return f"{inputs} -> built for {describe_target(self.built.target)}"


def to_torch(obj: Any, name: str = "the model") -> TVMModule:
    """``obj`` (what ``%mlc_build`` or ``%mlc_tune`` bound for an imported model) as a
    ``torch.nn.Module``; raises :class:`~mlc_jupyter.errors.DeployError` when it is not built."""
    return TVMModule(model_build(obj, name))


def _weights(built: Built, n_inputs: int) -> tuple[Any, ...]:
    origin = built.origin
    if origin is None:
        return ()
    return tuple(origin.example_args[n_inputs:])


def _attribute_name(name: str, taken: list[str]) -> str:
    """A parameter name PyTorch accepts (no dots), unique in the module."""
    attr = re.sub(r"\W", "_", name) or "weight"
    while attr in taken:
        attr += "_"
    return attr
