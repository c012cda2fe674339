"""The IPython layer: thin magics over the services.

Each module named in :data:`MAGIC_MODULES` defines a ``Magics`` subclass and ``register(ipython)``.
None of them imports ``tvm`` at import time, so ``%load_ext mlc_jupyter`` stays cheap. Every magic
runs with the libraries' messages captured and shown folded (:mod:`.quiet`).
"""

from __future__ import annotations

import importlib
from typing import Any

from .quiet import quiet

MAGIC_MODULES: tuple[str, ...] = (
    "cells", "build", "timing", "schedule", "trace", "tune", "devices", "passes", "course",
    "machine", "cache",
    "models", "export",
)  # fmt: skip


def register_all(ipython: Any) -> None:
    """Register every magic of the package with ``ipython``."""
    for name in MAGIC_MODULES:
        importlib.import_module(f"{__name__}.{name}").register(ipython)
    for magics in ipython.magics_manager.magics.values():
        for magic, func in magics.items():
            module = getattr(func, "__module__", "")
            if module.startswith(f"{__name__}.") and module != quiet.__module__:
                magics[magic] = quiet(func)
