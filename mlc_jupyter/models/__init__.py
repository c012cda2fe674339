"""Whole models: import PyTorch models into Relax (the service behind ``%mlc_import``).

Importing this package does not import TVM or PyTorch; :func:`import_model` does.
"""

from __future__ import annotations

from .importer import import_model

__all__ = ["import_model"]
