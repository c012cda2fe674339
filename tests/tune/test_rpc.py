"""Tuning through TVM's RPC: a tracker and two servers on loopback (``rpc_tracker``), ``%mlc_devices``."""

from __future__ import annotations

import pytest
from build_support import matmul
from rpc_support import KEY, free_port


def test_mlc_devices_lists_the_two_servers_of_the_tracker(rpc_tracker, shell, capsys):
    port, _ = rpc_tracker
    shell.run_line_magic("mlc_devices", f"127.0.0.1:{port}")
    out = capsys.readouterr().out
    assert KEY in out and "free   2" in out


def test_a_tune_over_rpc_measures_on_the_servers(rpc_tracker, tmp_path):
    from mlc_jupyter.tune import tune

    port, paths = rpc_tracker
    result = tune(matmul(64), trials=8, per_iter=8, work_dir=tmp_path,
                  rpc=f"127.0.0.1:{port}:{KEY}")  # fmt: skip
    assert result.rpc == f"127.0.0.1:{port}:{KEY}"
    assert result.n_records == 8 and result.best_latency_s is not None
    assert result.baseline_latency_s is not None  # both timed on the server, not here
    served = "".join(p.read_text() for p in paths)
    assert served.count("load_module") >= 1, served[-2000:]


def test_an_unreachable_tracker_gets_a_short_message():
    from mlc_jupyter.errors import RemoteError
    from mlc_jupyter.tune import list_devices

    with pytest.raises(RemoteError, match=r"cannot reach an RPC tracker at 127\.0\.0\.1"):
        list_devices(f"127.0.0.1:{free_port()}")
