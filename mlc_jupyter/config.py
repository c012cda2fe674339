"""Defaults a user can change: where caches live, the default target.

The cache folder is ``$MLC_JUPYTER_CACHE`` if set, else ``$XDG_CACHE_HOME/mlc_jupyter``, else
``~/.cache/mlc_jupyter``. Builds go to ``<cache>/builds``, tuning work dirs to ``<cache>/tune``,
this machine's measured limits (fp32 peak, memory bandwidth) to ``<cache>/machine.json``.

A cache holds libraries that are loaded into the process, so it must be the user's own: its
folders are made ``0700``, and one owned by another user or writable by group or others is not
used (a one-line :class:`CacheWarning` says why), the way pip disables a cache it does not own;
the process then caches in a private temporary folder.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
import warnings
from pathlib import Path


class CacheWarning(UserWarning):
    """A cache folder that is not used because someone else could write into it."""


#: Each cache folder once checked, and the folder used for it (itself, or a private stand-in).
_CHECKED: dict[str, Path] = {}


def _untrusted(path: Path) -> str | None:
    """Why ``path`` (made ``0700`` when missing) may not hold libraries this process loads;
    ``None`` when it may. A folder of the user's that others may only read is made ``0700``."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    info = path.stat()
    if info.st_uid != os.geteuid():
        return f"is owned by another user (uid {info.st_uid})"
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o022:  # someone else may have put a library there already
        return "is writable by group or others (chmod 700 it if only you wrote into it)"
    if mode & 0o077:
        with contextlib.suppress(OSError):
            path.chmod(0o700)
    return None


def private_dir(path: Path) -> Path:
    """``path`` when it is the user's own (made ``0700`` if missing), else a private temporary
    folder for this process, with a one-line :class:`CacheWarning` saying why."""
    key = str(path)
    found = _CHECKED.get(key)
    if found is not None and found.is_dir():
        return found
    problem = _untrusted(path)
    if problem is None:
        _CHECKED[key] = path
        return path
    stand_in = Path(tempfile.mkdtemp(prefix="mlc_jupyter-cache-"))
    warnings.warn(
        f"the cache folder {path} {problem}, so it is not used (as pip does): this process "
        f"caches in {stand_in}",
        CacheWarning,
        stacklevel=3,
    )
    _CHECKED[key] = stand_in
    return stand_in


def cache_root() -> Path:
    """The configured root of the caches, as the environment names it (not checked)."""
    explicit = os.environ.get("MLC_JUPYTER_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mlc_jupyter"


def cache_dir() -> Path:
    """The root of every cache this package writes (see :func:`private_dir`)."""
    return private_dir(cache_root())


def cache_subdir(*parts: str) -> Path:
    """A folder under the cache root, made and checked like the root."""
    return private_dir(cache_dir().joinpath(*parts))


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


def isolated_builds() -> bool:
    """Whether the functions of TIR builds run in a worker process by default, so a crashing
    kernel fails its call instead of the Jupyter kernel (``%mlc_isolate on``,
    ``$MLC_JUPYTER_ISOLATE=1``); a build can still ask for it with ``isolate=True``."""
    return os.environ.get("MLC_JUPYTER_ISOLATE", "").strip().lower() in _TRUE


def set_isolated_builds(on: bool) -> None:
    """Switch isolated builds on or off for this process (and the kernels it starts)."""
    os.environ["MLC_JUPYTER_ISOLATE"] = "1" if on else "0"


def build_cache_dir() -> Path:
    """Where builds are kept between kernel restarts (``<cache>/builds``)."""
    return cache_subdir("builds")


def build_cache_limit_bytes() -> int:
    """The size the build cache is kept under: ``$MLC_JUPYTER_BUILD_CACHE_MB`` (default 512)."""
    return int(float(os.environ.get("MLC_JUPYTER_BUILD_CACHE_MB", "512")) * 2**20)
