"""Tuning through TVM's RPC: a tracker and two servers on loopback (``rpc_tracker``), ``%mlc_devices``,
and the one warning that RPC has no authentication."""

from __future__ import annotations

import warnings

import pytest
from build_support import matmul
from rpc_support import KEY, SERVERS, free_port, local_tracker, wait_for_free
from text_support import unwrapped

from mlc_jupyter.errors import InsecureRPCWarning


def test_mlc_devices_lists_the_two_servers_of_the_tracker(rpc_tracker, shell, capsys):
    port, _ = rpc_tracker
    shell.run_line_magic("mlc_devices", f"127.0.0.1:{port}")
    out = capsys.readouterr().out
    assert KEY in out and "free   2" in out


def test_a_tune_over_rpc_measures_on_every_free_server_at_once(rpc_tracker, tmp_path):
    from mlc_jupyter.display.tune import result_text
    from mlc_jupyter.tune import tune

    port, paths = rpc_tracker
    wait_for_free(port, 2, timeout_s=30)  # a test before may just have closed its session
    before = [p.read_text().count("load_module") for p in paths]
    result = tune(matmul(64), trials=8, per_iter=8, work_dir=tmp_path,
                  rpc=f"127.0.0.1:{port}:{KEY}")  # fmt: skip
    assert result.rpc == f"127.0.0.1:{port}:{KEY}"
    assert result.n_records == 8 and result.best_latency_s is not None
    assert result.baseline_latency_s is not None  # both timed on the server, not here
    assert result.rpc_devices == 2  # one runner worker per free server under the key
    assert f"measured on 2 RPC devices at once (one candidate each) under {result.rpc}" in (
        unwrapped(result_text(result))
    )
    served = [p.read_text().count("load_module") - n for p, n in zip(paths, before, strict=True)]
    assert all(count >= 1 for count in served), served  # both servers measured candidates


RELAX_MATMUL = """
@I.ir_module
class Model:
    @R.function
    def main(x: R.Tensor((1, 64), "float32"), w: R.Tensor((64, 64), "float32")):
        with R.dataflow():
            y = R.matmul(x, w)
            R.output(y)
        return y
"""


@pytest.mark.slow
def test_a_model_tuned_over_rpc_says_how_many_devices_measured(rpc_tracker, tmp_path):
    from build_support import parse

    from mlc_jupyter.display.tune import result_text
    from mlc_jupyter.tune import tune

    port, _ = rpc_tracker
    wait_for_free(port, 2, timeout_s=30)
    result = tune(parse(RELAX_MATMUL, "relax"), trials=8, per_iter=8, work_dir=tmp_path,
                  rpc=f"127.0.0.1:{port}:{KEY}")  # fmt: skip
    assert result.kind == "model" and result.rpc_devices == 2
    assert "measured on 2 RPC devices at once (one candidate each)" in unwrapped(
        result_text(result)
    )


def test_a_server_in_use_is_not_counted_so_no_device_measures_two_candidates_at_once(
    rpc_tracker,
):
    from mlc_jupyter.compilation.remote import session
    from mlc_jupyter.tune.rpc import make_rpc_runner, parse_rpc

    spec = parse_rpc(f"127.0.0.1:{rpc_tracker[0]}:{KEY}")
    runner, servers = make_rpc_runner(spec)
    with session(spec):  # another notebook holds one of the two servers
        runner.run([])  # a round reads the tracker first
    assert servers.most_at_once == 1 and len(servers.registered) == 2


def test_the_first_rpc_use_of_a_session_warns_once_in_one_line(rpc_tracker, shell, monkeypatch):
    from mlc_jupyter.compilation import remote

    monkeypatch.setattr(remote, "_WARNED", set())  # as in a new session
    spec = f"127.0.0.1:{rpc_tracker[0]}:{KEY}"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        shell.run_line_magic("mlc_devices", f"127.0.0.1:{rpc_tracker[0]}")
        shell.run_line_magic("mlc_devices", f"127.0.0.1:{rpc_tracker[0]}")
        remote.remote_target(remote.parse_rpc(spec), "llvm")  # a session on a server
    told = [w for w in caught if issubclass(w.category, InsecureRPCWarning)]
    assert len(told) == 1, [str(w.message) for w in caught]
    (w,) = told
    shown = warnings.formatwarning(w.message, w.category, w.filename, w.lineno, w.line)
    assert shown.count("\n") == 1, shown  # one line, no source line under it
    for words in ("no authentication or encryption", "upload a library and run it",
                  "trusted network", "SSH tunnel"):  # fmt: skip
        assert words in shown


def test_the_rpc_warning_can_be_filtered(rpc_tracker, shell, monkeypatch):
    from mlc_jupyter.compilation import remote

    monkeypatch.setattr(remote, "_WARNED", set())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", category=InsecureRPCWarning)
        shell.run_line_magic("mlc_devices", f"127.0.0.1:{rpc_tracker[0]}")
    assert not [w for w in caught if issubclass(w.category, InsecureRPCWarning)]


def test_an_unreachable_tracker_gets_a_short_message():
    from mlc_jupyter.errors import RemoteError
    from mlc_jupyter.tune import list_devices

    with pytest.raises(RemoteError, match=r"cannot reach an RPC tracker at 127\.0\.0\.1") as info:
        list_devices(f"127.0.0.1:{free_port()}")
    hint = info.value.hint  # bound to loopback and reached through a tunnel, never 0.0.0.0
    assert "rpc_tracker --host 127.0.0.1" in hint and "ssh -N -L 9190:127.0.0.1:9190" in hint
    assert "--host 0.0.0.0" not in hint and "never 0.0.0.0" in hint


def _kill_on_next_measurement(server, log, stop) -> list[int]:
    """Start a thread that kills ``server`` (its whole process group) as soon as its log shows
    the next module loaded, i.e. while it measures a candidate; returns the list it fills with
    the count of loads it saw when it killed."""
    import os
    import signal
    import threading
    import time

    killed: list[int] = []
    seen = log.read_text().count("load_module")

    def watch() -> None:
        while not stop.is_set():
            loads = log.read_text().count("load_module")
            if loads > seen:
                os.killpg(server.pid, signal.SIGKILL)
                killed.append(loads)
                return
            time.sleep(0.005)

    threading.Thread(target=watch, daemon=True, name="kill-mid-measurement").start()
    return killed


@pytest.mark.slow
def test_a_server_killed_while_it_measures_a_candidate_leaves_a_finished_tune(tmp_path):
    """A tracker and two servers of their own (the shared ones stay whole); after the first
    round a server is killed the moment it has loaded a candidate's module (mid-measurement,
    mid-round). That candidate fails, the round's others are measured on the survivor, the run
    ends with all its trials and a tuned kernel instead of a hang, and the summary says a server
    was lost."""
    import threading
    import time

    from mlc_jupyter.display.tune import result_text
    from mlc_jupyter.tune import tune

    (tmp_path / "logs").mkdir()
    stop = threading.Event()
    with local_tracker(tmp_path / "logs") as (port, paths):
        victim = SERVERS[port][0]
        armed: list[list[int]] = []

        def arm_after_first_round(event) -> None:
            if not armed and event.trials_done >= 4:
                armed.append(_kill_on_next_measurement(victim, paths[0], stop))

        start = time.monotonic()
        try:
            result = tune(matmul(32), trials=8, per_iter=4, work_dir=tmp_path / "work",
                          rpc=f"127.0.0.1:{port}:{KEY}", on_progress=arm_after_first_round)  # fmt: skip
        finally:
            stop.set()
        elapsed = time.monotonic() - start
        survivor_loads = paths[1].read_text().count("load_module")
    assert elapsed < 240, elapsed
    assert armed and armed[0], "the victim measured nothing after the first round"
    assert result.n_records == 8 and result.best_latency_s is not None
    assert result.run_errors <= 1  # at most the candidate the victim was measuring
    assert survivor_loads >= 4  # the survivor measured the rest
    assert result.baseline_latency_s is not None
    assert result.rpc_devices == 2 and result.rpc_lost == 1
    text = unwrapped(result_text(result))
    assert "1 lost during the run" in text, text
