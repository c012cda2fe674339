"""Shared fixtures for real-browser tests: a JupyterLab server on loopback + Debian's Chromium.

Usage in a test module (mark it ``pytestmark = pytest.mark.browser``)::

    def test_something(lab):
        page = lab.open(["%load_ext mlc_jupyter", "1 + 1"], name="demo.ipynb")
        lab.run_all()
        lab.screenshot("demo")          # -> test-output/demo.png

``lab`` bundles the helpers of ``lab_support.py`` (``open_notebook``, ``run_all_cells``,
``wait_kernel_idle``, ``screenshot``) bound to a fresh page; a test module that needs one alone
imports it from ``lab_support`` (never from ``conftest``: pytest has one per folder).

``lab_server`` is session-scoped (one server for all browser tests); ``lab_page`` gives a fresh
Chromium page per test. Everything is skipped, with the reason, when ``/usr/bin/chromium`` (or
``$MLC_CHROMIUM``) or Playwright is missing.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from lab_support import REPO, Lab, LabServer, screenshot

CHROMIUM = os.environ.get("MLC_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def _require_browser() -> None:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (install Debian's chromium package)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        pytest.skip("playwright (python) is not installed")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def lab_server(tmp_path_factory) -> Iterator[LabServer]:
    """Start ``jupyter lab`` on 127.0.0.1 with a random token; stop it after the session."""
    _require_browser()
    root = tmp_path_factory.mktemp("lab-root")
    port, token = _free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    # own settings dir: no "get notified about news?" toast covering the screenshots
    settings = tmp_path_factory.mktemp("lab-settings")
    notification = settings / "@jupyterlab" / "apputils-extension"
    notification.mkdir(parents=True)
    (notification / "notification.jupyterlab-settings").write_text(
        '{"fetchNews": "false", "checkForUpdates": false}'
    )
    # every cell laid out: with the default "contentVisibility" a cell out of view is not
    # rendered, and its text and boxes read empty to a test (a user scrolls to it)
    tracker = settings / "@jupyterlab" / "notebook-extension"
    tracker.mkdir(parents=True)
    (tracker / "tracker.jupyterlab-settings").write_text('{"windowingMode": "none"}')
    env["JUPYTERLAB_SETTINGS_DIR"] = str(settings)
    # the lab extension built in this tree, ahead of the one the venv links (another checkout's)
    built = REPO / "mlc_jupyter" / "labextension"
    if (built / "package.json").exists():
        path = tmp_path_factory.mktemp("jupyter-path")
        (path / "labextensions").mkdir()
        (path / "labextensions" / "mlc-jupyter").symlink_to(built)
        env["JUPYTER_PATH"] = os.pathsep.join(filter(None, [str(path), env.get("JUPYTER_PATH")]))
    log = (tmp_path_factory.mktemp("lab-log") / "lab.log").open("w")
    cmd = [
        sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
        f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}", "--allow-root",
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=root)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2)  # noqa: S310
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"JupyterLab did not start (see {log.name})")
                time.sleep(0.5)
        yield LabServer(url, token, root)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def browser() -> Iterator:
    """A headless Debian Chromium driven by Playwright (one per session)."""
    _require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def lab_page(lab_server, browser, request) -> Iterator:
    """A fresh page; on failure a screenshot ``<test name>_failure.png`` lands in ``test-output/``."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.lab_server = lab_server  # type: ignore[attr-defined]  # for open_notebook
    yield page
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        screenshot(page, f"{request.node.name}_failure")
    page.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, f"rep_{rep.when}", rep)


@pytest.fixture
def lab(lab_page, lab_server) -> Lab:
    """Helpers bound to a fresh page of the session's JupyterLab (see the module docstring)."""
    return Lab(lab_page, lab_server)
