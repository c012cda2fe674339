"""Frozen result objects that every layer passes around; they know nothing about display."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ParsedCell:
    """What a ``%%tir`` / ``%%relax`` cell defined.

    ``objects`` maps each top-level name the cell defined to its value (``IRModule``,
    ``PrimFunc``, Relax ``Function``, or a plain Python value); ``value`` is the last definition,
    the one a cell's ``_`` holds.
    """

    kind: str
    objects: dict[str, Any]
    source: str
    translated: str
    translations: tuple[str, ...] = ()
    parse_seconds: float = 0.0
    warnings: tuple[str, ...] = field(default=())

    @property
    def names(self) -> list[str]:
        return list(self.objects)

    @property
    def value(self) -> Any:
        return self.objects[self.names[-1]] if self.objects else None


@dataclass(frozen=True)
class TuneProgress:
    """One progress event of a tuning run (sent after each measured batch).

    ``curve`` holds ``(trials_done, best_latency_s)`` points of the task this event is about;
    ``best_latency_s`` is ``None`` until a candidate ran.
    """

    task: str
    trials_done: int
    trials_total: int
    best_latency_s: float | None
    best_gflops: float | None
    elapsed_s: float
    eta_s: float | None
    curve: tuple[tuple[int, float], ...] = ()
    build_errors: int = 0
    run_errors: int = 0
    first_error: str = ""
    reused: int = 0
    resumed_from: int = 0
    log_path: str = ""
    work_dir: str = ""


@dataclass(frozen=True)
class TuneResult:
    """What ``tune()`` / ``%mlc_tune`` returns: the tuned module and how it got there.

    ``workload`` is the module that was tuned (for Relax: one IRModule per task in
    ``task_workloads``), ``mod`` the tuned module, ``trace`` the best schedule's trace (of the
    slowest task for Relax), latencies in seconds.
    """

    workload: Any
    mod: Any
    trace: Any
    best_latency_s: float | None
    baseline_latency_s: float | None
    target: Any
    work_dir: str
    n_records: int
    trials_requested: int = 0
    trials_new: int = 0
    resumed_from: int = 0
    interrupted: bool = False
    kind: str = "tir"
    flop: float | None = None
    build_errors: int = 0
    run_errors: int = 0
    first_error: str = ""
    elapsed_s: float = 0.0
    log_path: str = ""
    curves: dict[str, tuple[tuple[int, float], ...]] = field(default_factory=dict)
    task_workloads: dict[str, Any] = field(default_factory=dict)
    rpc: str | None = None

    @property
    def speedup(self) -> float | None:
        """Baseline latency over tuned latency (``None`` when either is unknown)."""
        if not self.best_latency_s or not self.baseline_latency_s:
            return None
        return self.baseline_latency_s / self.best_latency_s

    @property
    def best_gflops(self) -> float | None:
        if not self.flop or not self.best_latency_s:
            return None
        return self.flop / self.best_latency_s / 1e9
