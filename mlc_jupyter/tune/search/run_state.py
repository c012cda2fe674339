"""What the builder, runner and progress callback of one tuning run share, and their markers.

Importing this module does not import TVM.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import Any

from ...errors import error_reason
from ..budget import Deadline

#: Prefix of the in-memory "artifact paths" the builder hands to the runner.
MEMORY_PREFIX = "mlc-memory:"
#: Prefix of the artifact path of a candidate already measured in an earlier run (resume).
KNOWN_PREFIX = "mlc-known:"
#: Prefix of the run error of a candidate that failed to compile (counted as a build error).
BUILD_FAILED = "build failed: "
#: The run error of candidates skipped because the run is stopping (not saved as records).
INTERRUPTED = "interrupted before measurement"


class StopTuning(Exception):  # noqa: N818 - a signal, not an error
    """Raised inside MetaSchedule's loop to end the run (Ctrl-C or a progress callback)."""


class Shared:
    """State shared by the builder, runner and progress callback of one tuning run."""

    def __init__(self) -> None:
        self.modules: dict[str, Any] = {}
        self.known: dict[int, list[float]] = {}
        self.known_hits: set[str] = set()
        self.best: dict[str, float] = {}
        self.stop = threading.Event()
        self.stop_reason = ""  # "time" or "converged" when the budget ended the run
        self.deadline = Deadline()  # the run's (no time limit until the run sets it)
        self.build_errors = 0
        self.run_errors = 0
        self.first_error = ""
        self.early_stopped = 0
        self.counter = itertools.count()
        self.tick: Callable[[str], None] | None = None
        self.compiler = ""  # "nvrtc" or "nvcc" when candidates are GPU kernels
        self.cold = False  # candidates timed with their weights flushed (SearchOptions.cold)

    def out_of_time(self) -> bool:
        """The time budget ran out and something was measured: the rest of a batch is skipped
        (a round of slow-to-compile candidates would otherwise overrun the budget by minutes)."""
        return bool(self.best) and self.deadline.passed()

    def note_error(self, kind: str, message: str) -> None:
        """Count a failed build or run; keep the first one's reason for the summary."""
        if kind == "build":
            self.build_errors += 1
        else:
            self.run_errors += 1
        if not self.first_error:
            self.first_error = f"{kind}: {error_reason(message)}"
