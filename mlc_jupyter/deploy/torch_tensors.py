"""PyTorch tensors into and out of TVM builds through DLPack: shared memory, copies only when
a kernel could not use the tensor as it is.

TVM's CPU kernels assume 64-byte aligned buffers (they load with aligned vector instructions);
TVM's FFI takes a misaligned tensor without a word, and the kernel may then crash the process.
PyTorch allocates with that alignment, but a view (``x[1:]``, a slice of a larger buffer) may
start anywhere: such a tensor, and one that is not contiguous, is copied into a fresh one.
"""

from __future__ import annotations

from typing import Any

import torch

from ..errors import CallError, DeployError
from ..tvm_compat import is_array

#: The alignment in bytes TVM's kernels assume of every buffer (``kAllocAlignment``).
ALIGNMENT = 64


def is_aligned(tensor: torch.Tensor) -> bool:
    """True when TVM's kernels can read ``tensor`` where it is (aligned and contiguous)."""
    return tensor.is_contiguous() and tensor.data_ptr() % ALIGNMENT == 0


def shareable(tensor: torch.Tensor) -> torch.Tensor:
    """``tensor`` as TVM may read it through DLPack: itself (detached, no copy) when it is
    aligned and contiguous, else an aligned contiguous copy."""
    tensor = tensor.detach()  # DLPack refuses tensors that require grad; no copy
    if is_aligned(tensor):
        return tensor
    # PyTorch's allocators align fresh tensors to 64 bytes (CPU) and more (CUDA)
    return torch.empty(tensor.shape, dtype=tensor.dtype, device=tensor.device).copy_(tensor)


def check_device(tensor: torch.Tensor, what: str, device: str, target_kind: str) -> None:
    """Raise :class:`CallError` when ``tensor`` lives on another device than the build runs."""
    if tensor.device.type != device or (device != "cpu" and (tensor.device.index or 0) != 0):
        raise CallError(
            f"{what} is on {tensor.device}, but the model was built for {target_kind} "
            f"({device}{':0' if device != 'cpu' else ''})",
            hint=f"move it there with .to({device!r}), or build for its device",
        )


def as_torch(value: Any) -> Any:
    """A VM result as PyTorch tensors sharing its memory (a tuple for a tuple of outputs)."""
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, (tuple, list)) or is_array(value):
        return tuple(as_torch(item) for item in value)
    return torch.from_dlpack(value)


class _NoGradient(torch.autograd.Function):
    """An output that requires grad as eager's would, and whose backward says why no gradient
    flows through a TVM build (instead of PyTorch's "does not require grad")."""

    @staticmethod
    def forward(ctx: Any, refusal: str, out: Any, tracked: Any) -> Any:
        ctx.refusal = refusal
        return out.view_as(out)

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        raise DeployError(ctx.refusal)


def as_eager_returns(outs: tuple[Any, ...], args: Any, refusal: str) -> tuple[Any, ...]:
    """``outs`` requiring grad where eager's would (grad mode on, an input that requires it),
    their backward an error that says ``refusal``."""
    if not torch.is_grad_enabled():
        return outs
    tracked = next((a for a in args if isinstance(a, torch.Tensor) and a.requires_grad), None)
    if tracked is None:
        return outs
    return tuple(
        _NoGradient.apply(refusal, o, tracked)
        if isinstance(o, torch.Tensor) and o.is_floating_point()
        else o
        for o in outs
    )
