"""MetaSchedule tuning: a fast driver, progress events, a database that resumes, RPC devices.

Importing this package does not import TVM; :func:`tune` and :func:`top_records` do.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..results import TuneProgress, TuneResult
    from .records import Record

__all__ = ["list_devices", "top_records", "tune"]


def tune(
    mod: Any,
    target: Any = None,
    *,
    trials: int = 64,
    per_iter: int | None = None,
    work_dir: str | Path | None = None,
    fresh: bool = False,
    seed: int | None = None,
    space: Any = "default",
    rpc: str | None = None,
    on_progress: Callable[[TuneProgress], None] | None = None,
) -> TuneResult:
    """Tune ``mod`` (PrimFunc, TensorIR or Relax IRModule); see :func:`.driver.tune`."""
    from .driver import tune as _tune

    return _tune(
        mod, target, trials=trials, per_iter=per_iter, work_dir=work_dir, fresh=fresh,
        seed=seed, space=space, rpc=rpc, on_progress=on_progress,
    )  # fmt: skip


def top_records(work_dir: str | Path, k: int = 10) -> list[Record]:
    """The ``k`` fastest records of a tuning work dir (``.trace``, ``.workload_mod``, ``.latency_s``)."""
    from .records import top_records as _top

    return _top(work_dir, k)


def list_devices(rpc: str) -> list[dict[str, Any]]:
    """The queue of an RPC tracker (``HOST:PORT[:KEY]``): one dict per device key."""
    from .devices import list_devices as _list

    return _list(rpc)
