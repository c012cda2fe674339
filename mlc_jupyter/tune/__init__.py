"""MetaSchedule tuning: a fast driver, progress events, a database that resumes, RPC devices.

Importing this package does not import TVM; :func:`tune` and :func:`top_records` do.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .driver import tune
    from .records import Record

__all__ = ["list_devices", "top_records", "tune"]


def __getattr__(name: str) -> Any:
    """``tune`` is :func:`.driver.tune`, loaded (with TVM) on first use."""
    if name == "tune":
        from .driver import tune

        return tune
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def top_records(work_dir: str | Path, k: int = 10) -> list[Record]:
    """The ``k`` fastest records of a tuning work dir (``.trace``, ``.workload_mod``, ``.latency_s``)."""
    from .records import top_records as _top

    return _top(work_dir, k)


def list_devices(rpc: str) -> list[dict[str, Any]]:
    """The queue of an RPC tracker (``HOST:PORT[:KEY]``): one dict per device key."""
    from .rpc import list_devices as _list

    return _list(rpc)
