"""Measuring on devices behind a TVM RPC tracker: the ``--rpc`` spec, the runner, the device list.

Importing this module does not import TVM.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from typing import Any

from ..errors import TuneError, error_reason
from ..tvm_compat import metaschedule, tvm


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


def make_rpc_runner(spec: RPCSpec) -> Any:
    """MetaSchedule's RPC runner for the devices registered with a tracker under ``spec.key``."""
    ms = metaschedule()
    config = ms.runner.RPCConfig(
        tracker_host=spec.host, tracker_port=spec.port, tracker_key=spec.key,
        session_timeout_sec=60,
    )  # fmt: skip
    evaluator = ms.runner.EvaluatorConfig(number=3, repeat=1, min_repeat_ms=50)
    return ms.runner.RPCRunner(config, evaluator, max_workers=1)


def list_devices(spec: str) -> list[dict[str, Any]]:
    """One dict per device key: ``key``, ``free``, ``pending`` (``spec`` is ``HOST:PORT[:KEY]``)."""
    parts = spec.split(":")
    if len(parts) < 2 or not parts[1].isdigit():
        raise TuneError(f"expected HOST:PORT for the tracker, got {spec!r}")
    host, port = parts[0], int(parts[1])
    try:
        socket.create_connection((host, port), timeout=3).close()  # fail fast, no 60 s retry
        tracker = tvm().rpc.connect_tracker(host, port)
        summary = tracker.summary()
    except Exception as err:  # noqa: BLE001 - TVM raises several types for a dead tracker
        raise TuneError(
            f"cannot reach an RPC tracker at {host}:{port}: {error_reason(err)}",
            hint="start one with: python -m tvm.exec.rpc_tracker --host 0.0.0.0 --port 9190",
        ) from None
    out = []
    for key, info in sorted(summary.get("queue_info", {}).items()):
        if len(parts) > 2 and parts[2] and key != parts[2]:
            continue
        out.append({"key": key, "free": int(info["free"]), "pending": int(info["pending"])})
    return out
