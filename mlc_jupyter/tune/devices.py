"""The devices an RPC tracker knows about (for ``%mlc_devices``)."""

from __future__ import annotations

import socket
from typing import Any

from ..errors import TuneError
from ..tvm_compat import tvm


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
            f"cannot reach an RPC tracker at {host}:{port}: {str(err).splitlines()[0]}",
            hint="start one with: python -m tvm.exec.rpc_tracker --host 0.0.0.0 --port 9190",
        ) from None
    out = []
    for key, info in sorted(summary.get("queue_info", {}).items()):
        if len(parts) > 2 and parts[2] and key != parts[2]:
            continue
        out.append({"key": key, "free": int(info["free"]), "pending": int(info["pending"])})
    return out
