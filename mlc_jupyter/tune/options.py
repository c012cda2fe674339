"""Tuning options: how each search runs, the target (completed from the device that measures)
and the work dir. A kernel and a whole model are tuned with the same :class:`SearchOptions`."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..compilation import device_for, gpu_present, is_cpu, is_gpu_target, resolve_target
from ..compilation.remote import RPCSpec, check_key, remote_target
from ..compilation.targets import device_target
from ..config import cache_dir
from ..errors import NoGPUError, TargetError
from ..tvm_compat import structural_hash, tvm
from .report import TuneProgress


@dataclass(frozen=True)
class SearchOptions:
    """How a kernel's search runs; a whole model's kernels all share one (see :func:`.tune`).

    ``per_iter`` candidates a round (``None``: :func:`.kernel.default_per_iter`), the search's
    ``seed``, its ``space`` (:mod:`.spaces.choice`), ``rpc`` (``HOST:PORT:KEY`` of the devices that
    measure) and ``on_progress``, which hears every round. ``wait``: a work dir another run
    holds is waited for (the progress says so); ``False`` fails at once (:mod:`.work_lock`).
    ``cold``: candidates are measured, the top records re-timed and compared with the kernel's
    default with the weights flushed from the CPU caches before each call
    (:class:`.timing.KernelSamplers`, :class:`.search.runner.ModuleClock`); a model's tuning on a
    CPU sets it, since its kernels read their weights from memory in the model.
    """

    per_iter: int | None = None
    seed: int | None = None
    space: Any = "default"
    rpc: str | None = None
    on_progress: Callable[[TuneProgress], None] | None = None
    wait: bool = True
    cold: bool = False


def tuning_target(spec: Any = None, rpc: RPCSpec | None = None) -> Any:
    """The target to tune for: the host CPU (with ``mcpu`` and ``num-cores``) or a GPU.

    The spelling is the shared :func:`mlc_jupyter.compilation.resolve_target`'s. A GPU target
    is completed from the GPU that will run the candidates: the RPC server's (``rpc``; a server
    without that GPU is a ``RemoteError`` before anything is built) or this machine's. With
    neither, it is refused at once (``NoGPUError``) instead of building candidates for minutes
    that can never run.
    """
    target = resolve_target(spec)
    kind = str(target.kind.name)
    if is_gpu_target(target):
        if rpc is not None:
            return remote_target(rpc, spec if spec is not None else target)
        if not gpu_present(target):
            raise NoGPUError(
                f"target {kind!r} needs a {kind.upper()} GPU, and this machine has none",
                hint="tune for the CPU (--target llvm), or measure on a GPU machine:"
                " --rpc HOST:PORT:KEY (or set TVM_TRACKER_HOST/PORT/KEY)",
            )
        return device_target(spec if spec is not None else target, device_for(target))
    if not is_cpu(target):
        raise TargetError(f"cannot tune for target kind {kind!r}")
    if rpc is not None:
        check_key(rpc)  # a key nobody serves would keep the runner waiting
    if target.attrs.get("num-cores"):
        return target
    config = dict(target.export())
    config["num-cores"] = os.cpu_count() or 1
    return tvm().target.Target(config)


def work_dir_for(
    workload: Any, target: Any, kind: str, space_key: str = "", root: Path | None = None
) -> Path:
    """The default work dir of a workload: ``<cache>/tune/<kind>-<hash of workload+target+space>``
    (under ``root`` instead of ``<cache>/tune`` when given).

    Tunes of one workload in different search spaces keep separate databases: a record of one
    space is no answer for the other. ``space_key`` is :attr:`.spaces.Spaces.key` (``""`` for
    MetaSchedule's default space, so earlier caches stay valid).
    """
    key = f"{structural_hash(workload)}|{target}"
    if space_key:
        key += f"|{space_key}"
    digest = hashlib.sha1(key.encode(), usedforsecurity=False).hexdigest()[:16]
    return (root if root is not None else cache_dir() / "tune") / f"{kind}-{digest}"
