"""The ``--rpc`` spec every magic accepts: ``HOST:PORT:KEY`` or ``env`` (no tracker needed)."""

from __future__ import annotations

import pytest

from mlc_jupyter.compilation.remote import RPCSpec, list_devices, parse_rpc
from mlc_jupyter.errors import RemoteError


def test_host_port_key_is_read_and_prints_back_the_same():
    spec = parse_rpc("127.0.0.1:9190:local")
    assert spec == RPCSpec("127.0.0.1", 9190, "local") and str(spec) == "127.0.0.1:9190:local"
    assert parse_rpc(None) is None and parse_rpc(spec) is spec


def test_env_reads_the_tracker_variables(monkeypatch):
    monkeypatch.setenv("TVM_TRACKER_HOST", "tracker.lan")
    monkeypatch.setenv("TVM_TRACKER_PORT", "9191")
    monkeypatch.setenv("TVM_TRACKER_KEY", "rtx")
    assert parse_rpc("env") == RPCSpec("tracker.lan", 9191, "rtx")
    monkeypatch.delenv("TVM_TRACKER_KEY")
    with pytest.raises(RemoteError, match="--rpc env needs TVM_TRACKER_HOST"):
        parse_rpc("env")


@pytest.mark.parametrize("bad", ["localhost:9190", "localhost:port:key", ":9190:key", "h:9190:"])
def test_a_malformed_spec_gets_one_line_with_an_example(bad):
    with pytest.raises(RemoteError, match=r"--rpc expects HOST:PORT:KEY \(e\.g\. 127\.0\.0\.1"):
        parse_rpc(bad)


def test_a_tracker_spec_without_a_port_is_refused_before_connecting():
    with pytest.raises(RemoteError, match="HOST:PORT"):
        list_devices("localhost")
