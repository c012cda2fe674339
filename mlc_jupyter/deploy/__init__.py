"""Builds taken out of the notebook: into PyTorch and into plain Python programs.

:func:`to_torch` wraps a model build as a ``torch.nn.Module`` (tensors shared through DLPack),
:func:`torch_backend` is a ``torch.compile`` backend that builds each captured graph the way
``%mlc_build`` does (tuned records applied), :func:`export_build` writes a library with a small
loader (``%mlc_export``). Importing this package imports neither TVM nor PyTorch.
"""

from __future__ import annotations

from typing import Any

__all__ = ["export_build", "to_torch", "torch_backend"]


def to_torch(obj: Any, name: str = "the model") -> Any:
    """A ``torch.nn.Module`` running a model build (see :func:`.torch_module.to_torch`)."""
    from .torch_module import to_torch as _to_torch  # deferred: imports torch and TVM

    return _to_torch(obj, name)


def torch_backend(**options: Any) -> Any:
    """A ``torch.compile`` backend (see :class:`.torch_backend.TorchBackend`)."""
    from .torch_backend import TorchBackend  # deferred: imports torch and TVM

    return TorchBackend(**options)


def export_build(obj: Any, path: Any, name: str = "the model") -> Any:
    """Write a build's library and its loader to ``path`` (see :func:`.export.export_build`)."""
    from .export import export_build as _export  # deferred: imports TVM

    return _export(obj, path, name)
