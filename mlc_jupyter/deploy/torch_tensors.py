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

from ..errors import CallError
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


def torch_device(target_kind: str) -> str:
    """The PyTorch device type of a TVM target kind (``llvm`` -> ``cpu``)."""
    return "cpu" if target_kind in ("llvm", "c") else target_kind


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
