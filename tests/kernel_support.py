"""A real Jupyter kernel driven from a test: run cells, read what they print, restart, kill."""

from __future__ import annotations

import os
import queue
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


class Kernel:
    """A python3 kernel (this repository first on its path) with its own cache folder."""

    def __init__(self, cache: Path, **env: str) -> None:
        from jupyter_client.manager import start_new_kernel

        path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
        self.env = {**os.environ, "MLC_JUPYTER_CACHE": str(cache), "PYTHONPATH": path, **env}
        self.manager, self.client = start_new_kernel(kernel_name="python3", env=self.env)

    def run(self, code: str, timeout: float = 300) -> tuple[str, str | None]:
        """Run a cell; return its stdout and the error's name and value (``None`` if it ran)."""
        msg_id = self.client.execute(code)
        out: list[str] = []
        error = None
        while True:
            try:
                msg = self.client.get_iopub_msg(timeout=timeout)
            except queue.Empty:
                raise TimeoutError(f"no answer from the kernel within {timeout} s") from None
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream" and content["name"] == "stdout":
                out.append(content["text"])
            elif kind == "error":
                error = f"{content['ename']}: {content['evalue']}"
            elif kind == "status" and content["execution_state"] == "idle":
                return "".join(out), error

    def start_run(self, code: str) -> str:
        """Start a cell without waiting for it; returns its message id."""
        return self.client.execute(code)

    @property
    def pid(self) -> int:
        return int(self.manager.provisioner.pid)

    def restart(self) -> None:
        """Restart the kernel the way the notebook's menu does (an orderly shutdown first)."""
        self.manager.restart_kernel(now=False)
        self.client.wait_for_ready(timeout=120)

    def shutdown(self) -> Any:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)
