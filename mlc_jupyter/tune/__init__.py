"""MetaSchedule tuning: a fast driver, progress events, a database that resumes, RPC devices.

Importing this package does not import TVM: :func:`tune` (in :mod:`.driver`, which imports
TVM and MetaSchedule at import time) loads on first use; :func:`top_records` imports TVM when
called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .budget import DEFAULT_TIME_S
from .records import Record, top_records
from .rpc import list_devices
from .spaces import SPACE_NAMES

if TYPE_CHECKING:
    from .driver import tune

__all__ = ["DEFAULT_TIME_S", "SPACE_NAMES", "Record", "list_devices", "top_records", "tune"]


def __getattr__(name: str) -> Any:
    """``tune`` is :func:`.driver.tune`, loaded (with TVM) on first use."""
    if name == "tune":
        from .driver import tune

        return tune
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
