"""Isolated builds: a kernel that crashes fails its call in a worker process, the caller lives
on, the next call works, outputs land in the caller's arrays, and Ctrl-C ends a running call."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from build_support import RELAX_ADD, SCATTER

from mlc_jupyter.cells import parse_script
from mlc_jupyter.compilation import build_module
from mlc_jupyter.compilation.isolate import worker
from mlc_jupyter.errors import BuildError, KernelCrashError

REPO = Path(__file__).resolve().parents[2]


#: A kernel that runs for many seconds (a serial chain of float adds, n x 2^20 of them).
SPIN = """
@T.prim_func
def spin(A: T.Buffer((1,), "float32"), n: T.int64):
    for i, j in T.grid(n, T.int64(1048576)):
        with T.block("A"):
            vi, vj = T.axis.remap("RR", [i, j])
            A[0] = A[0] * T.float32(0.999) + T.float32(1.0)
"""

#: A far index: 200 MB past a 64-byte buffer.
FAR = 50_000_000


def tir(source: str, name: str):
    return parse_script(source, {}, kind="tir").objects[name]


@pytest.fixture(scope="module")
def scatter():
    return build_module(tir(SCATTER, "scatter"), "llvm", isolate=True)


def test_a_crashing_kernel_raises_in_the_caller_and_the_next_call_works(scatter):
    a = np.arange(16, dtype="float32")
    order = np.arange(16, dtype="int32")[::-1].copy()
    b = np.zeros(16, "float32")
    scatter["scatter"](a, order, b)
    np.testing.assert_array_equal(b, a[::-1])  # written into the caller's array
    first = worker().pid
    bad = order.copy()
    bad[3] = FAR
    b[:] = -1
    with pytest.raises(KernelCrashError) as caught:
        scatter["scatter"](a, bad, b)
    error = caught.value
    assert error.function == "scatter" and error.signal == "SIGSEGV"
    assert "scatter crashed with SIGSEGV" in str(error) and "--checked" in error.hint
    assert error.arguments == ("A: float32[16]", "idx: int32[16]", "B: float32[16] (written)")
    np.testing.assert_array_equal(b, -1)  # a crashed call writes nothing
    import torch

    out = torch.zeros(16)
    scatter["scatter"](torch.from_numpy(a), torch.from_numpy(order), out)  # a new worker
    assert worker().pid != first
    np.testing.assert_array_equal(out.numpy(), a[::-1])
    np.testing.assert_array_equal(scatter["scatter"](a, order), a[::-1])  # outputs allocated


def test_the_same_call_without_isolation_kills_the_process():
    script = (
        "import numpy as np\n"
        "from mlc_jupyter.cells import parse_script\n"
        "from mlc_jupyter.compilation import build_module\n"
        f"f = parse_script({SCATTER!r}, {{}}, kind='tir').objects['scatter']\n"
        "lib = build_module(f, 'llvm', persist=False)\n"
        "idx = np.arange(16, dtype='int32'); idx[3] = " + str(FAR) + "\n"
        "lib['scatter'](np.ones(16, 'float32'), idx, np.zeros(16, 'float32'))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "MLC_JUPYTER_ISOLATE": "0"}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True)
    assert done.returncode == -signal.SIGSEGV, done.stderr.decode()[-2000:]


def test_ctrl_c_during_an_isolated_call_ends_the_worker_and_the_next_call_works(scatter):
    spin = build_module(tir(SPIN, "spin"), "llvm", isolate=True)
    a = np.zeros(1, "float32")
    spin["spin"](a, 1)  # the worker is up
    running = worker().process
    # Ctrl-C raises KeyboardInterrupt, as in a notebook's kernel; a process started in the
    # background by a non-interactive shell (a CI job) inherits SIGINT ignored.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            spin["spin"](a, 30_000)  # a minute or more of work, ended by the interrupt
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert running.poll() is not None  # killed, not left spinning
    a[:] = 0
    spin["spin"](a, 1)
    assert a[0] > 0


def test_isolating_a_relax_build_is_refused_when_asked_and_noted_under_the_session_mode(
    monkeypatch,
):
    mod = parse_script(RELAX_ADD, {}, kind="relax").objects["AddTwice"]
    with pytest.raises(BuildError, match="Relax VM executable is not isolated"):
        build_module(mod, "llvm", isolate=True, persist=False)
    monkeypatch.setenv("MLC_JUPYTER_ISOLATE", "1")
    built = build_module(mod, "llvm", persist=False)
    assert not built.isolated and any("not isolated" in note for note in built.notes)
    one = np.ones((4, 4), "float32")
    np.testing.assert_array_equal(built(one, one), 3)  # x + 2 y, run in this process
