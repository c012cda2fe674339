"""Screenshots of what a learner sees, at 1400 and 900 px, for a before/after comparison.

Runs notebook 05 whole in a real JupyterLab (Debian's Chromium via Playwright) plus a small
notebook with a schedule stepper and a pipeline pass stepper, and saves PNGs of: the MLP race
and its roofline (default and tuned), the small-kernel tuning curve (``--func linear0``), the
ResNet-18 tune result, the schedule diff and the pass stepper's graph::

    PYTHONPATH=$PWD .venv/bin/python bench/screens_learner.py --tag after

``--tree`` picks the source tree the kernel imports (default: this one), so the same script
photographs an older checkout. About 6 minutes on 2 cores; the PNGs go to
``bench/results/screens/<tag>_<part>_<width>.png``.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "browser"))
sys.path.insert(0, str(REPO / "tests"))

from build_support import MM_RELU_STEPS  # noqa: E402
from lab_support import LabServer, open_notebook, run_all_cells  # noqa: E402
from test_layout_browser import MLP  # noqa: E402

MM_RELU = (REPO / "tests" / "course" / "listings" / "ch2_mm_relu.py").read_text()
CREATE_MODEL = (REPO / "tests" / "course" / "listings" / "ch7_create_model.py").read_text()
STEPPERS = [
    "%load_ext mlc_jupyter",
    MLP,
    CREATE_MODEL + "\nMLPModel = create_model()",
    "%mlc_passes MLPModel --pipeline target --as MLPLowered",
    "%%tir --quiet\n" + MM_RELU,
    "%%mlc_schedule MyModule\n" + MM_RELU_STEPS,
]
#: notebook 05's cells to photograph: part name -> the start of the cell's source
NOTEBOOK_05 = {
    "mlp_race": "%mlc_time mlp_model MLPModule_lib",
    "mlp_race_tuned": "%mlc_time mlp_model mlp_relax mlp_relax_tuned",
    "mlp_tune": "%mlc_tune mlp_relax",
    "small_kernel_curve": "%mlc_tune MyModuleMixture --func linear0",
    "resnet18_tune": "%mlc_tune resnet_relax",
}
WIDTHS = (1400, 900)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_lab(tree: Path, root: Path) -> tuple[subprocess.Popen, LabServer]:
    """A JupyterLab on loopback whose kernels import mlc_jupyter from ``tree``."""
    port, token = _free_port(), secrets.token_hex(16)
    settings = root.parent / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "notification.jupyterlab-settings").write_text(
        '{"fetchNews": "false", "checkForUpdates": false}'
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(tree),
        "JUPYTERLAB_SETTINGS_DIR": str(root.parent / "settings"),
    }
    built = tree / "mlc_jupyter" / "labextension"
    if (built / "package.json").exists():  # the tree's own lab extension first
        (root.parent / "jpath" / "labextensions").mkdir(parents=True)
        (root.parent / "jpath" / "labextensions" / "mlc-jupyter").symlink_to(built)
        env["JUPYTER_PATH"] = str(root.parent / "jpath")
    cmd = [
        sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1",
        f"--port={port}", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
        "--allow-root",
    ]  # fmt: skip
    log = (root.parent / "lab.log").open("w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=root)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2)  # noqa: S310
            return proc, LabServer(url, token, root)
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"JupyterLab did not start (see {log.name})") from None
            time.sleep(0.5)


def cell_output(page, source_start: str):
    """The output area of the code cell whose source starts with ``source_start``."""
    cell = page.locator(".jp-CodeCell").filter(
        has=page.locator(".jp-InputArea-editor", has_text=source_start)
    )
    return cell.first.locator(".jp-OutputArea").first


def shoot(page, locator, path: Path) -> None:
    locator.scroll_into_view_if_needed()
    page.wait_for_timeout(300)
    locator.screenshot(path=str(path))
    print("saved", path.relative_to(REPO) if path.is_relative_to(REPO) else path, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tag", required=True, help="file name prefix: before / after")
    parser.add_argument("--tree", type=Path, default=REPO, help="source tree the kernel imports")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "screens")
    parser.add_argument("--skip-05", action="store_true", help="the steppers only")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    from playwright.sync_api import sync_playwright

    work = Path(tempfile.mkdtemp(prefix="screens-"))
    root = work / "root"
    root.mkdir()
    proc, server = start_lab(args.tree.resolve(), root)
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path=os.environ.get("MLC_CHROMIUM", "/usr/bin/chromium"),
                headless=True,
                args=["--no-sandbox", "--disable-gpu"],
            )
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.lab_server = server
            _steppers(page, args)
            if not args.skip_05:
                _notebook_05(page, server, args)
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)


def _steppers(page, args) -> None:
    open_notebook(page, STEPPERS, name="steppers.ipynb")
    started = time.monotonic()
    run_all_cells(page, timeout_ms=600_000)
    print(f"steppers notebook ran in {time.monotonic() - started:.0f} s", flush=True)
    steppers = page.locator(".mlc-st")
    steppers.nth(1).wait_for(timeout=60_000)
    passes, schedule = steppers.nth(0), steppers.nth(1)
    passes.get_by_test_id("view").select_option("graph")
    schedule.get_by_test_id("view").select_option("side")
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 1000})
        page.wait_for_timeout(800)
        shoot(page, schedule, args.out / f"{args.tag}_schedule_diff_{width}.png")
        shoot(page, passes, args.out / f"{args.tag}_pass_graph_{width}.png")
    page.set_viewport_size({"width": 1400, "height": 1000})


def _notebook_05(page, server, args) -> None:
    nb = json.loads((REPO / "notebooks" / "05_frameworks.ipynb").read_text())
    for cell in nb["cells"]:
        cell.pop("outputs", None) if cell["cell_type"] != "code" else cell.update(outputs=[])
    (server.root / "nb05.ipynb").write_text(json.dumps(nb))
    page.goto(server.notebook_url("nb05.ipynb"))
    page.wait_for_selector(".jp-Notebook", timeout=60_000)
    from lab_support import wait_kernel_idle

    wait_kernel_idle(page)
    started = time.monotonic()
    run_all_cells(page, timeout_ms=1_800_000)
    print(f"notebook 05 ran in {time.monotonic() - started:.0f} s", flush=True)
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 1000})
        page.wait_for_timeout(800)
        for part, source in NOTEBOOK_05.items():
            shoot(page, cell_output(page, source), args.out / f"{args.tag}_{part}_{width}.png")


if __name__ == "__main__":
    main()
