"""Defaults a user can change: where caches live, the default target.

The cache folder is ``$MLC_JUPYTER_CACHE`` if set, else ``$XDG_CACHE_HOME/mlc_jupyter``, else
``~/.cache/mlc_jupyter``. Builds go to ``<cache>/builds``, tuning work dirs to ``<cache>/tune``,
this machine's measured limits (fp32 peak, memory bandwidth) to ``<cache>/machine.json``.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """The root of every cache this package writes."""
    explicit = os.environ.get("MLC_JUPYTER_CACHE")
    if explicit:
        root = Path(explicit)
    else:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        root = Path(base) / "mlc_jupyter"
    root.mkdir(parents=True, exist_ok=True)
    return root


def machine_limits_path() -> Path:
    """The file that caches this machine's measured limits (``%mlc_machine --refresh`` redoes it)."""
    return cache_dir() / "machine.json"


def default_target() -> str:
    """The target used when a magic gets no ``--target`` (``$MLC_JUPYTER_TARGET`` or ``llvm``)."""
    return os.environ.get("MLC_JUPYTER_TARGET", "llvm")


#: Values of ``$MLC_JUPYTER_CHECKED`` that switch checked builds on.
_TRUE = ("1", "true", "yes", "on")


def checked_builds() -> bool:
    """Whether builds check every buffer index at run time by default (``%mlc_checked on``,
    ``$MLC_JUPYTER_CHECKED=1``); a build can still ask for it with ``checked=True``."""
    return os.environ.get("MLC_JUPYTER_CHECKED", "").strip().lower() in _TRUE


def set_checked_builds(on: bool) -> None:
    """Switch checked builds on or off for this process (and the kernels it starts)."""
    os.environ["MLC_JUPYTER_CHECKED"] = "1" if on else "0"


def build_cache_dir() -> Path:
    """Where builds are kept between kernel restarts (``<cache>/builds``)."""
    path = cache_dir() / "builds"
    path.mkdir(parents=True, exist_ok=True)
    return path


def build_cache_limit_bytes() -> int:
    """The size the build cache is kept under: ``$MLC_JUPYTER_BUILD_CACHE_MB`` (default 512)."""
    return int(float(os.environ.get("MLC_JUPYTER_BUILD_CACHE_MB", "512")) * 2**20)
