"""mlc_jupyter: a Jupyter-native workbench for machine-learning compilation with Apache TVM.

``%load_ext mlc_jupyter`` registers the magics without importing TVM; TVM loads on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

from .cells import parse_script
from .tvm_compat import use_all_cores

__version__ = "0.1.0"
__all__ = [
    "PassStepper",
    "ScheduleStepper",
    "TraceReplay",
    "cache_info",
    "clear_caches",
    "load_ipython_extension",
    "parse_relax",
    "parse_tir",
    "to_torch",
    "torch_backend",
    "unload_ipython_extension",
]

#: The widgets, loaded on first use (with anywidget), so that importing the package stays cheap.
_WIDGETS = ("PassStepper", "ScheduleStepper", "TraceReplay")


#: Builds out to PyTorch (a module, a ``torch.compile`` backend), also loaded on first use.
_DEPLOY = ("to_torch", "torch_backend")


#: The cache's parts and clearing them (``%mlc_cache`` in a script), also loaded on first use.
_CACHES = ("cache_info", "clear_caches")


def __getattr__(name: str) -> Any:
    if name in _CACHES:
        return getattr(importlib.import_module(".caches", __name__), name)
    if name in _WIDGETS:
        return getattr(importlib.import_module(".widgets", __name__), name)
    if name in _DEPLOY:
        return getattr(importlib.import_module(".deploy", __name__), name)
    raise AttributeError(f"module 'mlc_jupyter' has no attribute {name!r}")


def load_ipython_extension(ipython: Any) -> None:
    """Called by ``%load_ext mlc_jupyter``: register every magic and display formatter."""
    # deferred: IPython's layer, only when IPython asks
    from .display.formatters import register_formatters
    from .magics import register_all

    use_all_cores()  # before the kernel's first TVM kernel sizes its thread pool
    register_all(ipython)
    register_formatters(ipython)  # the one table of rich output, once


def unload_ipython_extension(ipython: Any) -> None:
    """Nothing to undo beyond what IPython does itself."""


def parse_tir(source: str, namespace: dict[str, Any] | None = None) -> Any:
    """Parse TensorIR TVMScript text (course or 0.27 spelling); return its last definition."""
    return parse_script(source, namespace, kind="tir", first_line=1).value


def parse_relax(source: str, namespace: dict[str, Any] | None = None) -> Any:
    """Parse Relax TVMScript text (course or 0.27 spelling); return its last definition."""
    return parse_script(source, namespace, kind="relax", first_line=1).value
