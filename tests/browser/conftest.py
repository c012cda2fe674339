"""Shared fixtures for real-browser tests: a JupyterLab server on loopback + Debian's Chromium.

Usage in a test module (mark it ``pytestmark = pytest.mark.browser``)::

    def test_something(lab):
        page = lab.open(["%load_ext mlc_jupyter", "1 + 1"], name="demo.ipynb")
        lab.run_all()
        lab.screenshot("demo")          # -> test-output/demo.png

``lab`` bundles the helpers below (``open_notebook``, ``run_all_cells``, ``wait_kernel_idle``,
``screenshot``) bound to a fresh page, so test modules need not import this conftest.

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
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
OUTPUT = REPO / "test-output"
CHROMIUM = os.environ.get("MLC_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@dataclass(frozen=True)
class LabServer:
    """A running JupyterLab: ``url`` (no trailing slash), ``token`` and the served ``root`` dir."""

    url: str
    token: str
    root: Path

    def notebook_url(self, name: str) -> str:
        """URL that opens notebook ``name`` (relative to ``root``) in the Lab UI."""
        # a workspace of its own (reset), so tabs opened by earlier tests are not restored
        workspace = Path(name).stem.replace(" ", "-") or "test"
        return f"{self.url}/lab/workspaces/{workspace}/tree/{name}?reset&token={self.token}"


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
    env["JUPYTERLAB_SETTINGS_DIR"] = str(settings)
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


def write_notebook(server: LabServer, cells: list[str], name: str = "test.ipynb") -> Path:
    """Write a notebook of code ``cells`` (python3 kernel) into the server's root dir."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    path = server.root / name
    nbformat.write(nb, path)
    return path


def open_notebook(
    page, cells: list[str], name: str = "test.ipynb", server: LabServer | None = None
):
    """Write ``cells`` as notebook ``name``, open it in ``page`` and wait for an idle kernel."""
    server = server or page.lab_server
    write_notebook(server, cells, name)
    page.goto(server.notebook_url(name))
    page.wait_for_selector(".jp-Notebook", timeout=60_000)
    wait_kernel_idle(page)
    return page


def wait_kernel_idle(page, timeout_ms: int = 120_000) -> None:
    """Wait until the notebook's kernel status (status bar) reads Idle."""
    from playwright.sync_api import expect

    expect(page.get_by_text("| Idle").first).to_be_visible(timeout=timeout_ms)


def run_all_cells(page, timeout_ms: int = 180_000) -> None:
    """Run every cell (Run > Run All Cells) and wait until no cell is queued or running."""
    from playwright.sync_api import expect

    page.locator(".jp-Notebook").first.click()  # focus the notebook the menu command acts on
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_text("Run All Cells", exact=True).click()
    # an unrun cell's prompt is "[ ]:", a queued or running one "[*]:"; wait until none is left
    prompts = page.locator(".jp-CodeCell .jp-InputPrompt")
    expect(prompts.filter(has_text="[ ]")).to_have_count(0, timeout=timeout_ms)
    expect(prompts.filter(has_text="[*]")).to_have_count(0, timeout=timeout_ms)
    wait_kernel_idle(page, timeout_ms)


def screenshot(page_or_locator, name: str) -> Path:
    """Save a PNG ``test-output/<name>.png`` of a page or a locator; return its path."""
    OUTPUT.mkdir(exist_ok=True)
    path = OUTPUT / f"{name}.png"
    page_or_locator.screenshot(path=str(path))
    return path


class Lab:
    """The helpers of this module bound to one page (what the ``lab`` fixture gives)."""

    def __init__(self, page, server: LabServer) -> None:
        self.page, self.server = page, server

    def open(self, cells: list[str], name: str = "test.ipynb"):
        """Write and open a notebook of ``cells``; return the page."""
        return open_notebook(self.page, cells, name, self.server)

    def run_all(self, timeout_ms: int = 180_000) -> None:
        """Run all cells and wait until the kernel is idle."""
        run_all_cells(self.page, timeout_ms)

    def screenshot(self, name: str, locator=None) -> Path:
        """Save ``test-output/<name>.png`` of the page (or of ``locator``)."""
        return screenshot(locator if locator is not None else self.page, name)


@pytest.fixture
def lab(lab_page, lab_server) -> Lab:
    """Helpers bound to a fresh page of the session's JupyterLab (see the module docstring)."""
    return Lab(lab_page, lab_server)
