"""A TVM RPC tracker with servers on loopback, as a test sees a remote device.

The servers run this machine's TVM: they have a CPU and no CUDA runtime, so a GPU module sent to
them meets the same refusal a server without a GPU gives.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

KEY = "mlc-test"
#: The server processes of each running ``local_tracker``, by its port (to kill one mid-run).
SERVERS: dict[int, list[subprocess.Popen]] = {}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen, timeout_s: float = 60) -> None:
    """Wait until something accepts connections on ``port`` (the tracker is up)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"the RPC tracker did not start on port {port}")


def wait_for_free(port: int, servers: int, timeout_s: float = 90) -> None:
    """Wait until the tracker has ``servers`` free under its one key (a server registers again a
    moment after a session on it ends)."""
    from mlc_jupyter.compilation.remote import list_devices

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            devices = list_devices(f"127.0.0.1:{port}")
            if devices and devices[0]["free"] >= servers:
                return
        except Exception:  # noqa: BLE001,S110 - the tracker is still starting
            pass
        time.sleep(0.5)


@contextlib.contextmanager
def local_tracker(logs: Path, servers: int = 2, key: str = KEY) -> Iterator[tuple[int, list]]:
    """A tracker and ``servers`` RPC servers registered under ``key``; yields (port, log paths)."""
    port = free_port()
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tvm.exec.rpc_tracker", "--host", "127.0.0.1",
             "--port", str(port), "--port-end", str(port + 1)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )
    ]  # fmt: skip
    paths = []
    try:
        wait_for_port(port, procs[0])
        for i in range(servers):
            path = logs / f"server{i}.log"
            paths.append(path)
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "tvm.exec.rpc_server", "--host", "127.0.0.1",
                     "--port", str(sport := free_port()), "--port-end", str(sport + 1),
                     "--tracker", f"127.0.0.1:{port}", "--key", key],
                    stdout=path.open("w"), stderr=subprocess.STDOUT, start_new_session=True,
                )
            )  # fmt: skip
        wait_for_free(port, servers)
        SERVERS[port] = procs[1:]
        yield port, paths
    finally:
        # The tracker and servers run their loops in TVM PopenWorker children: stop whole groups.
        SERVERS.pop(port, None)
        for proc in reversed(procs):
            with contextlib.suppress(ProcessLookupError):  # a server a test killed
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs:
            proc.wait(timeout=20)
