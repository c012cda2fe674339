"""Whole models: import PyTorch models into Relax (the service behind ``%mlc_import``).

Importing this package does not import TVM or PyTorch; :func:`import_model` does.
"""

from __future__ import annotations

from typing import Any

__all__ = ["import_model"]


def import_model(model: Any, inputs: Any, **kwargs: Any) -> Any:
    """Import a ``torch.nn.Module`` into Relax (see :func:`.importer.import_model`)."""
    from .importer import import_model as _import

    return _import(model, inputs, **kwargs)
