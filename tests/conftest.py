"""Shared fixtures: a real IPython shell with the extension loaded, and the expensive results
several test modules read (an imported model, its build's profile, a tuned kernel, an executed
notebook), made once per session. Each is a real result, made as a user makes it, and read-only to the tests: a test that
changes what it gets makes its own."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("MLC_JUPYTER_CACHE", tempfile.mkdtemp(prefix="mlc-jupyter-cache-"))

REPO = Path(__file__).resolve().parents[1]
COURSE = REPO.parent / "shared" / "course"


@pytest.fixture(scope="session")
def _global_shell():
    from IPython.testing.globalipapp import start_ipython

    shell = start_ipython()
    shell.run_line_magic("load_ext", "mlc_jupyter")
    return shell


@pytest.fixture
def shell(_global_shell) -> Iterator:
    """A real IPython shell with ``%load_ext mlc_jupyter`` done and an empty namespace."""
    _global_shell.reset(new_session=False)
    yield _global_shell
    _global_shell.reset(new_session=False)


@pytest.fixture(scope="session")
def rpc_tracker(tmp_path_factory):
    """A TVM RPC tracker on loopback with two CPU servers under ``rpc_support.KEY``.

    Yields ``(port, server log paths)``; the servers have no CUDA runtime.
    """
    from rpc_support import local_tracker

    with local_tracker(tmp_path_factory.mktemp("rpc")) as started:
        yield started


@pytest.fixture(scope="session")
def book_mlp():
    """The book's MLP (784-128-10, seeded weights) and its ``%mlc_import``: ``(model, imported)``."""
    import torch
    from model_support import mlp

    from mlc_jupyter.models import import_model

    model = mlp()
    return model, import_model(model, torch.randn(1, 784))


@pytest.fixture(scope="session")
def book_mlp_profile(book_mlp):
    """The per-kernel profile of the book's MLP's default CPU build (``%mlc_time --breakdown``)."""
    from mlc_jupyter.compilation import build_module
    from mlc_jupyter.measure import profile_kernels

    return profile_kernels(build_module(book_mlp[1]), runs=2, name="mlp")


@pytest.fixture(scope="session")
def tuned_matmul(tmp_path_factory):
    """A real ``tune()`` of a 64x64 matmul (8 trials, seeded): a trace with postprocessing."""
    from trace_support import make_tune_result

    return make_tune_result(tmp_path_factory)


@pytest.fixture(scope="session")
def executed_notebook():
    """``executed_notebook(name, timeout)``: ``notebooks/<name>`` run whole in a real kernel, once
    per session (the notebook tests and the browser tests read the same run)."""
    from notebook_support import execute_notebook

    runs: dict = {}

    def run(name: str, timeout: int = 600):
        if name not in runs:
            runs[name] = execute_notebook(name, timeout)
        return runs[name]

    return run
