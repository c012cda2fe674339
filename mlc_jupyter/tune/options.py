"""Tuning options: the target, the RPC spec, the work dir of a workload."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config import cache_dir, default_target
from ..errors import NoGPUError, TargetError, TuneError
from ..tvm_compat import host_cpu, tvm

_GPU_KINDS = {"cuda", "rocm", "vulkan", "metal", "opencl"}


def _resolve(spec: Any) -> Any:
    """A TVM ``Target`` for ``spec``, via the shared target parser when it is there."""
    try:
        from ..build import resolve_target  # type: ignore[attr-defined]
    except ImportError:
        resolve_target = None
    if resolve_target is not None:
        return resolve_target(spec)
    _tvm = tvm()
    if isinstance(spec, _tvm.target.Target):
        return spec
    if spec is None or spec in ("llvm", "cpu"):
        spec = {"kind": "llvm"}
    if isinstance(spec, dict) and spec.get("kind") == "llvm":
        spec = {"mcpu": host_cpu(), **spec}
    try:
        return _tvm.target.Target(spec)
    except Exception as err:  # noqa: BLE001 - TVM raises several types here
        raise TargetError(f"cannot understand target {spec!r}: {err}") from None


def tuning_target(spec: Any = None) -> Any:
    """The target to tune for: the host CPU (with ``mcpu`` and ``num-cores``) or a GPU that exists.

    A GPU target on a machine without that GPU is refused at once (``NoGPUError``) instead of
    building candidates for minutes that can never run.
    """
    _tvm = tvm()
    target = _resolve(default_target() if spec is None else spec)
    kind = str(target.kind.name)
    if kind in _GPU_KINDS:
        device = _tvm.runtime.device(kind, 0)
        if not device.exist:
            raise NoGPUError(
                f"target {kind!r} needs a {kind.upper()} GPU, and this machine has none",
                hint="tune for the CPU (--target llvm) or measure on a GPU machine with --rpc",
            )
        return target
    if kind != "llvm":
        raise TargetError(f"cannot tune for target kind {kind!r}")
    config = dict(target.export())
    changed = False
    if "mcpu" not in config or not config["mcpu"]:
        config["mcpu"] = host_cpu()
        changed = True
    if not config.get("num-cores"):
        config["num-cores"] = os.cpu_count() or 1
        changed = True
    return _tvm.target.Target(config) if changed else target


@dataclass(frozen=True)
class RPCSpec:
    """Where to measure: a tracker's host, port and the device key."""

    host: str
    port: int
    key: str

    def __str__(self) -> str:
        return f"{self.host}:{self.port}:{self.key}"


def parse_rpc(spec: str | None) -> RPCSpec | None:
    """Parse ``HOST:PORT:KEY``; with ``spec="env"`` read ``TVM_TRACKER_HOST/PORT/KEY``."""
    if spec is None:
        return None
    if spec == "env":
        host = os.environ.get("TVM_TRACKER_HOST")
        port = os.environ.get("TVM_TRACKER_PORT")
        key = os.environ.get("TVM_TRACKER_KEY")
        if not (host and port and key):
            raise TuneError(
                "--rpc env needs TVM_TRACKER_HOST, TVM_TRACKER_PORT and TVM_TRACKER_KEY set"
            )
        spec = f"{host}:{port}:{key}"
    parts = spec.split(":")
    if len(parts) != 3 or not parts[1].isdigit() or not parts[0] or not parts[2]:
        raise TuneError(
            f"--rpc expects HOST:PORT:KEY (e.g. 127.0.0.1:9190:local), got {spec!r}",
            hint="the key is the one the RPC servers registered with (rpc_server --key)",
        )
    return RPCSpec(parts[0], int(parts[1]), parts[2])


def work_dir_for(workload: Any, target: Any, kind: str) -> Path:
    """The default work dir of a workload: ``<cache>/tune/<kind>-<hash of workload+target>``."""
    from ..tvm_compat import structural_hash

    digest = hashlib.sha1(
        f"{structural_hash(workload)}|{target}".encode(), usedforsecurity=False
    ).hexdigest()[:16]
    return cache_dir() / "tune" / f"{kind}-{digest}"
