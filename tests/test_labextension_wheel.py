"""The wheel carries the prebuilt lab extension: installed where Node does not exist, it works.

Builds the wheel, installs it (without its heavy dependencies) plus JupyterLab from PyPI into a
fresh venv whose PATH holds only that venv, and asks ``jupyter labextension list``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BUILT = REPO / "mlc_jupyter" / "labextension" / "package.json"

pytestmark = pytest.mark.slow


def _run(cmd: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    done = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"{cmd} failed:\n{done.stdout}\n{done.stderr}"
    return done


def test_the_wheel_installed_without_node_shows_the_extension_enabled_and_ok(tmp_path):
    assert BUILT.exists(), "the lab extension is not built: run labextension/build.sh first"
    wheels = tmp_path / "wheels"
    _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(REPO)],
        dict(os.environ),
        tmp_path,
    )
    (wheel,) = wheels.glob("mlc_jupyter-*.whl")

    fresh = tmp_path / "fresh"
    venv.EnvBuilder(with_pip=True).create(fresh)
    bin_dir = fresh / "bin"
    env = {
        "PATH": str(bin_dir),  # nothing else: no node, no npm
        "HOME": str(tmp_path / "home"),
        "PIP_CACHE_DIR": os.environ.get("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip")),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "JUPYTER_DATA_DIR": str(tmp_path / "data"),
        "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
        "JUPYTER_PREFER_ENV_PATH": "1",
    }
    assert shutil.which("node", path=env["PATH"]) is None
    assert shutil.which("npm", path=env["PATH"]) is None
    pip = [str(bin_dir / "python"), "-m", "pip", "install", "-q"]
    _run([*pip, "--no-deps", str(wheel)], env, tmp_path)
    _run([*pip, "jupyterlab>=4,<5"], env, tmp_path)

    listing = _run([str(bin_dir / "jupyter"), "labextension", "list"], env, tmp_path)
    text = re.sub(r"\x1b\[[0-9;]*m", "", listing.stdout + listing.stderr)
    version = json.loads(BUILT.read_text())["version"]
    assert re.search(rf"mlc-jupyter v{re.escape(version)} enabled\s+OK", text), text
    assert str(fresh / "share" / "jupyter" / "labextensions") in text
    assert "incompatible" not in text
