"""The README's two first commands, as a new user types them: the open command starts a JupyterLab
that answers (as root too, where ``scripts/setup.sh`` set ``allow_root`` in the venv's Jupyter
config), and the test command is still the one the README shows.

The open command runs as written, from the repository root, with a Jupyter config dir of its own
that only picks a free port and a token and keeps the browser closed: it is the command's text,
not a copy of it, that is checked.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()
OPEN = "bash scripts/setup.sh && .venv/bin/jupyter lab notebooks/00_quickstart.ipynb"
TEST = "bash scripts/setup.sh && .venv/bin/python -m pytest"


def _first_commands() -> list[str]:
    """The README's first code block, one command a line, comments dropped."""
    block = re.search(r"```bash\n(.*?)```", README, re.S)
    assert block, "README.md lost its first ```bash block (the two commands a new user runs)"
    return [line.split("#")[0].strip() for line in block.group(1).splitlines() if line.strip()]


def test_the_readme_starts_with_the_open_and_the_test_command():
    assert _first_commands()[:2] == [OPEN, TEST], (
        "README.md's first two commands changed: update OPEN/TEST here and check that "
        "test_the_readme_open_command_starts_a_lab_that_answers still runs the first as written"
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _venv_bin() -> str:
    """``.venv/bin/`` where the README's set-up made it, else the venv running these tests."""
    return (
        ".venv/bin/"
        if (REPO / ".venv" / "bin" / "jupyter").exists()
        else f"{Path(sys.executable).parent}/"
    )


def test_the_readme_open_command_starts_a_lab_that_answers(tmp_path):
    open_command = _first_commands()[0].split("&&")[-1].strip()
    assert open_command.startswith(".venv/bin/jupyter lab ")
    port, token = _free_port(), secrets.token_hex(16)
    config = tmp_path / "config"
    config.mkdir()
    (config / "jupyter_server_config.json").write_text(
        json.dumps(
            {"ServerApp": {"port": port, "port_retries": 0, "open_browser": False, "token": token}}
        )
    )
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(config),  # not the user's ~/.jupyter (it may allow root itself)
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces"),
        "BROWSER": "true",  # should anything still try to open one, it opens nothing
    }
    env.pop("JUPYTER_CONFIG_PATH", None)
    command = open_command.replace(".venv/bin/", _venv_bin(), 1)
    log = (tmp_path / "lab.log").open("w+")
    proc = subprocess.Popen(
        ["bash", "-c", f"exec {command}"],
        cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2) as r:  # noqa: S310
                    assert r.status == 200
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    text = log.read()
                    hint = (
                        " (as root: run `bash scripts/setup.sh` again, it sets allow_root in "
                        "the venv's Jupyter config)"
                        if "--allow-root" in text
                        else ""
                    )
                    raise AssertionError(
                        f"`{open_command}` did not start a server{hint}:\n{text[-2000:]}"
                    ) from None
                time.sleep(0.5)
        # given a file, Jupyter serves the file's folder and opens the file in it
        name = Path(open_command.split()[-1]).name
        contents = f"{url}/api/contents/{name}?content=0&token={token}"
        with urllib.request.urlopen(contents, timeout=10) as r:  # noqa: S310
            assert json.load(r)["type"] == "notebook"
        with urllib.request.urlopen(f"{url}/lab/tree/{name}?token={token}", timeout=10) as r:  # noqa: S310
            assert b"JupyterLab" in r.read()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        log.close()
