"""``tvm.nd`` as the book used it: ``tvm.nd.array(x[, dev])``, ``tvm.nd.empty``, ``tvm.nd.NDArray``.

The tensors are TVM 0.27's runtime tensors. A GPU device on a machine without that GPU raises
the project's :class:`~mlc_jupyter.errors.NoGPUError` instead of TVM's "Device API cuda is not
enabled".
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import NoGPUError
from ..tvm_compat import empty as _empty
from ..tvm_compat import tensor as _tensor
from ..tvm_compat import tensor_type

_CPU = 1  # DLPack's device type of the host CPU


def require_device(device: Any, what: str) -> None:
    """Raise the project's :class:`NoGPUError` when ``device`` is a GPU this machine lacks."""
    if device is None or int(device.dlpack_device_type()) == _CPU:
        return
    try:
        present = bool(device.exist)
    except Exception:  # noqa: BLE001 - a disabled device API raises instead of saying False
        present = False
    if not present:
        raise NoGPUError(
            f"no GPU is present: {what} on {device} needs a GPU this machine does not have",
            hint="keep the data on tvm.cpu(); GPU code can still be built and read "
            "(rt_mod.imported_modules[0].get_source())",
        )


def array(data: Any, device: Any = None, mem_scope: Any = None) -> Any:
    """A runtime tensor holding a copy of ``data`` (a NumPy array, list or tensor)."""
    require_device(device, "tvm.nd.array")
    if hasattr(data, "numpy") and not isinstance(data, np.ndarray):
        data = data.numpy()
    return _tensor(np.asarray(data), device=device)


def as_tensors(args: tuple[Any, ...]) -> list[Any]:
    """``args`` with NumPy arrays copied into (aligned) runtime tensors; the rest as given."""
    return [_tensor(a) if isinstance(a, np.ndarray) else a for a in args]


def empty(shape: Any, dtype: str = "float32", device: Any = None, mem_scope: Any = None) -> Any:
    """An uninitialised runtime tensor."""
    require_device(device, "tvm.nd.empty")
    return _empty(shape, dtype=dtype, device=device)


def __getattr__(name: str) -> Any:
    if name == "NDArray":
        return tensor_type()
    raise AttributeError(f"tvm.nd has no {name!r} in the course shims (TVM 0.27: tvm.runtime)")
