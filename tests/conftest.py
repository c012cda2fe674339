"""Shared fixtures: a real IPython shell with the extension loaded."""

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
