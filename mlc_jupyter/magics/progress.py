"""Progress views the magics share: a long step (import, build) that appears only once it has
taken a couple of seconds, and a tuning run's live progress.

A service reports ``(stage, done, total)``; :class:`StageProgress` shows one updating line in a
notebook (a line now and then in a terminal) with the time so far, but only when the whole step
runs longer than ``QUIET_S``: a quick import or a cached build stays silent.
:class:`LiveTuneProgress` hears a tune's progress events (``%mlc_tune``, and the course's
``ms.tune_tir`` in course mode).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from types import TracebackType
from typing import Any

from IPython.display import display

from ..display.tune import progress_bundle, progress_text

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


class LiveTuneProgress:
    """Live progress: one updated display in a notebook, a line now and then in a terminal.

    ``name`` is what the user tuned (``%mlc_tune mm_relu``): a lone kernel is task ``main`` to
    MetaSchedule, and the header names it as the user does instead.
    """

    def __init__(self, shell: Any, quiet: bool, name: str | None = None) -> None:
        self.quiet = quiet
        self.name = name
        self.rich = getattr(shell, "kernel", None) is not None
        self.handle: Any = None
        self.curves: dict[str, Any] = {}
        self.last = 0.0
        self.started = False

    def task_started(self, index: int, total: int, task: Any) -> None:
        """A whole model's next kernel: say which, of how many this budget reaches, and give it
        a progress display of its own."""
        if self.quiet:
            return
        print(
            f"tuning kernel {index + 1} of the {total} this budget reaches: {task.name} "
            f"({task.share:.1%} of the model's time)",
            flush=True,
        )
        self.handle, self.curves, self.started = None, {}, True

    def __call__(self, event: Any) -> None:
        if self.quiet:
            return
        if self.name and event.task == "main":
            event = dataclasses.replace(event, task=self.name)
        if getattr(event, "waiting", ""):  # another run holds the work dir: nothing measured yet
            print(progress_text(event), flush=True)
            return
        if not self.started:
            self.started = True
            print(f"tuning in {event.work_dir} (MetaSchedule log: {event.log_path})")
        self.curves[event.task] = event.curve
        if self.rich:
            bundle = progress_bundle(event, self.curves)
            if self.handle is None:
                self.handle = display(bundle, raw=True, display_id=True)
            else:
                self.handle.update(bundle, raw=True)
            return
        now = time.perf_counter()
        done = event.trials_total is not None and event.trials_done >= event.trials_total
        if now - self.last >= 2.0 or done:
            self.last = now
            print(progress_text(event), flush=True)
