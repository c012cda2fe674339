"""A wheel built from a clean checkout builds and carries the lab extension; it works without Node.

The checkout is a fresh ``git clone`` (no prebuilt extension, no ``node_modules``), built with
``pip wheel`` the way ``python -m build`` would (the hatch-jupyter-builder hook runs npm and
``jupyter labextension build``), but without build isolation: the build tools come from this
venv and npm's cache, which keeps the test to a few minutes. The wheel is then installed with
JupyterLab into a fresh venv whose PATH holds only that venv, and ``jupyter labextension list``
must show the extension enabled and OK. Without npm the build must fail and say so.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LABEXTENSION = "share/jupyter/labextensions/mlc-jupyter"

pytestmark = pytest.mark.slow


def _run(cmd: list[str], env: dict[str, str], cwd: Path, ok: bool = True):
    done = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    if ok:
        assert done.returncode == 0, f"{cmd} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def _clean_clone(tmp_path: Path) -> Path:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("needs git and a git checkout")
    clone = tmp_path / "clone"
    _run(
        ["git", "clone", "-q", "--depth", "1", f"file://{REPO}", str(clone)],
        dict(os.environ),
        tmp_path,
    )
    assert not (clone / "mlc_jupyter" / "labextension").exists()
    return clone


def _build_wheel(clone: Path, out: Path, path: str, ok: bool = True):
    env = {**os.environ, "PATH": path, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--no-deps",
        "--no-build-isolation",
        "-w",
        str(out),
        ".",
    ]
    return _run(cmd, env, clone, ok)


@pytest.mark.long
def test_a_wheel_built_from_a_clean_clone_carries_the_extension_and_works_without_node(tmp_path):
    if shutil.which("npm") is None:
        pytest.skip("building the lab extension needs Node and npm")
    clone = _clean_clone(tmp_path)
    wheels = tmp_path / "wheels"
    venv_bin = str(Path(sys.executable).parent)
    _build_wheel(clone, wheels, f"{venv_bin}{os.pathsep}{os.environ['PATH']}")
    (wheel,) = wheels.glob("mlc_jupyter-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    data = f"mlc_jupyter-{wheel.name.split('-')[1]}.data/data/{LABEXTENSION}"
    assert f"{data}/package.json" in names
    assert any(re.match(rf"{re.escape(data)}/static/remoteEntry\.\w+\.js$", n) for n in names)

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
    version = json.loads((clone / "labextension" / "package.json").read_text())["version"]
    assert re.search(rf"mlc-jupyter v{re.escape(version)} enabled\s+OK", text), text
    assert str(fresh / "share" / "jupyter" / "labextensions") in text
    assert "incompatible" not in text


def test_a_build_without_npm_fails_and_says_npm_is_missing(tmp_path):
    clone = _clean_clone(tmp_path)
    done = _build_wheel(clone, tmp_path / "wheels", str(Path(sys.executable).parent), ok=False)
    assert done.returncode != 0
    assert "Could not find cmd (npm) in path" in done.stdout + done.stderr
    assert not list((tmp_path / "wheels").glob("*.whl"))
