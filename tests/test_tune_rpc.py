"""Tuning through TVM's RPC: a tracker and two servers on loopback, and ``%mlc_devices``."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import pytest
from build_support import matmul

KEY = "mlc-test"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for_port(port: int, proc: subprocess.Popen, timeout_s: float = 60) -> None:
    """Wait until something accepts connections on ``port`` (the tracker is up)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    pytest.fail(f"the RPC tracker did not start on port {port}")


@pytest.fixture(scope="module")
def tracker(tmp_path_factory):
    """A tracker and two RPC servers registered under ``KEY``; yields (port, server log paths)."""
    from mlc_jupyter.tune import list_devices

    logs = tmp_path_factory.mktemp("rpc")
    port = _free_port()
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tvm.exec.rpc_tracker", "--host", "127.0.0.1",
             "--port", str(port), "--port-end", str(port + 1)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )
    ]  # fmt: skip
    paths = []
    try:
        _wait_for_port(port, procs[0])
        for i in range(2):
            path = logs / f"server{i}.log"
            paths.append(path)
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "tvm.exec.rpc_server", "--host", "127.0.0.1",
                     "--port", str(sport := _free_port()), "--port-end", str(sport + 1),
                     "--tracker", f"127.0.0.1:{port}",
                     "--key", KEY],
                    stdout=path.open("w"), stderr=subprocess.STDOUT, start_new_session=True,
                )
            )  # fmt: skip
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                devices = list_devices(f"127.0.0.1:{port}")
                if devices and devices[0]["free"] >= 2:
                    break
            except Exception:  # noqa: BLE001,S110 - the tracker is still starting
                pass
            time.sleep(1)
        yield port, paths
    finally:
        # The tracker and servers run their loops in TVM PopenWorker children: stop whole groups.
        for proc in reversed(procs):
            os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs:
            proc.wait(timeout=20)


def test_mlc_devices_lists_the_two_servers_of_the_tracker(tracker, shell, capsys):
    port, _ = tracker
    shell.run_line_magic("mlc_devices", f"127.0.0.1:{port}")
    out = capsys.readouterr().out
    assert KEY in out and "free   2" in out


def test_a_tune_over_rpc_measures_on_the_servers(tracker, tmp_path):
    from mlc_jupyter.tune import tune

    port, paths = tracker
    result = tune(matmul(64), trials=8, per_iter=8, work_dir=tmp_path,
                  rpc=f"127.0.0.1:{port}:{KEY}")  # fmt: skip
    assert result.rpc == f"127.0.0.1:{port}:{KEY}"
    assert result.n_records == 8 and result.best_latency_s is not None
    served = "".join(p.read_text() for p in paths)
    assert served.count("load_module") >= 1, served[-2000:]


def test_an_unreachable_tracker_gets_a_short_message():
    from mlc_jupyter.errors import TuneError
    from mlc_jupyter.tune import list_devices

    with pytest.raises(TuneError, match="cannot reach an RPC tracker at 127.0.0.1"):
        list_devices(f"127.0.0.1:{_free_port()}")
