"""Progress of a long step (import, build) that appears only once it has taken a couple of seconds.

A service reports ``(stage, done, total)``; this shows one updating line in a notebook (a line now
and then in a terminal) with the time so far, but only when the whole step runs longer than
``QUIET_S``: a quick import or a cached build stays silent.
"""

from __future__ import annotations

import threading
import time
from types import TracebackType
from typing import Any

from IPython.display import display

#: Steps quicker than this show no progress at all.
QUIET_S = 2.0


class StageProgress:
    """A ``(stage, done, total)`` callback with a heartbeat; use it as a context manager."""

    def __init__(self, shell: Any, what: str, quiet: bool = False) -> None:
        self.what = what
        self.quiet = quiet
        self.rich = getattr(shell, "kernel", None) is not None
        self.start = time.perf_counter()
        self.stage = ""
        self.count = ""
        self.handle: Any = None
        self.printed = ""
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._beat, daemon=True)

    def __enter__(self) -> StageProgress:
        if not self.quiet:
            self.thread.start()
        return self

    def __exit__(self, kind: type | None, err: BaseException | None, tb: TracebackType | None):
        self.stop.set()
        if self.thread.is_alive():
            self.thread.join()
        if self.handle is not None or self.printed:
            state = "failed" if kind is not None else "done"
            self._show(f"{self.what}: {state} in {time.perf_counter() - self.start:.1f} s")

    def __call__(self, stage: str, done: int, total: int) -> None:
        with self.lock:
            self.stage = stage
            self.count = f" {done}/{total}" if total > 1 else ""
        self._update()

    def _beat(self) -> None:
        while not self.stop.wait(1.0):
            self._update()

    def _update(self) -> None:
        elapsed = time.perf_counter() - self.start
        if self.quiet or elapsed < QUIET_S or not self.stage:
            return
        with self.lock:
            line = f"{self.what}: {self.stage}{self.count} ({elapsed:.0f} s)"
        self._show(line)

    def _show(self, line: str) -> None:
        if self.rich:
            bundle = {"text/plain": line}
            if self.handle is None:
                self.handle = display(bundle, raw=True, display_id=True)
            else:
                self.handle.update(bundle, raw=True)
        elif line.split(" (")[0] != self.printed.split(" (")[0]:
            self.printed = line
            print(line, flush=True)
