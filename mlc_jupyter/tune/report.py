"""What a tune reports: progress events while it runs, the tasks of a whole model, its result.

Both implementations (:mod:`.kernel`, :mod:`.whole_model`) make these; the display, the magics,
the trace service and the course shims read them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class TuneProgress:
    """One progress event of a tuning run (sent after each measured batch).

    ``curve`` holds ``(trials_done, best_latency_s)`` points of the task this event is about;
    ``best_latency_s`` is ``None`` until a candidate ran. ``trials_total`` is ``None`` for a run
    limited by time (``time_budget_s``); ``peak_fraction`` is the best kernel's share of this
    machine's fp32 peak (``None`` when unknown).
    """

    task: str
    trials_done: int
    trials_total: int | None
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
    peak_fraction: float | None = None
    time_budget_s: float | None = None
    #: what compiles GPU candidates to GPU code (``"nvrtc"`` or ``"nvcc"``; ``""`` on a CPU)
    compiler: str = ""
    #: set while the run waits for the work dir another run holds (``"waiting for the tuning
    #: run of pid 4242, started 12:03"``), before anything is measured
    waiting: str = ""

    def waiting_text(self) -> str:
        """The line that says whom the run waits for and which work dir that run holds."""
        return f"[{self.task}] {self.waiting} (it holds {self.work_dir})"


@dataclass(frozen=True)
class ModelTask:
    """One kernel of a whole-model tune: how much of the model it is and what tuning did.

    ``share`` is its part of the model's latency under the default build; ``trials`` the records
    its database holds for it, ``new`` of them measured by this run and ``reused`` from earlier
    runs (of this model or any other with the same kernel); ``seconds`` the time this run spent
    on it (seeding, search, re-timing, comparison); ``before_s`` / ``after_s`` its default and
    tuned kernel per call, timed in turns; ``kept`` says which one the tuned model uses
    (``"tuned"`` or ``"default"``). Kernels of the same structure are tuned once:
    ``shared_with`` names the other kernels of the model that share this one's tuning. Kernels
    that share its anchor operator with other epilogues are not searched: ``replayed_on`` names
    them on the searched kernel's row, and ``replayed_from`` the searched kernel on theirs (its
    best decisions replayed on them, kept only where faster than their default).
    """

    name: str
    calls: int
    share: float
    trials: int
    before_s: float | None
    after_s: float | None
    kept: str
    seconds: float = 0.0
    new: int = 0
    reused: int = 0
    shared_with: tuple[str, ...] = ()
    replayed_on: tuple[str, ...] = ()
    replayed_from: str = ""


@dataclass(frozen=True)
class TuneResult:
    """What ``tune()`` / ``%mlc_tune`` returns: the tuned module and how it got there.

    ``workload`` is the module that was tuned (for Relax: one IRModule per task in
    ``task_workloads``), ``mod`` the tuned module, ``trace`` the best schedule's trace (of the
    slowest task for Relax), latencies in seconds. ``best_latency_s`` is measured after the search
    the way ``%mlc_time`` measures (``timing``), not taken from the search's own figures.
    ``stop_reason`` says why the run ended: ``trials``, ``time``, ``converged``, ``interrupted``
    or ``searched`` (MetaSchedule found no candidate it had not measured, budget left);
    ``spaces`` names each task's search space; ``peak_gflops`` is this machine's fp32 peak for
    the target's cores (``None`` when unknown; for a whole model, also when the memory's
    bandwidth bounds its default build instead) and ``bytes`` what the kernel's arguments hold.
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
    #: how many of the tracker's devices measured candidates at once (``0``: none measured)
    rpc_devices: int = 0
    #: how many of the servers under the key left the tracker during the run (died, stopped):
    #: the candidate each was measuring failed, the rest went to the others
    rpc_lost: int = 0
    stop_reason: str = ""
    spaces: dict[str, str] = field(default_factory=dict)
    timing: Any = None
    #: the untuned (``tir``) or default (``model``) workload's ``Timing``, taken beside ``timing``
    #: (its spread says whether a speed-up is measurable); ``None`` when it was not timed so
    baseline_timing: Any = None
    peak_gflops: float | None = None
    bytes: float | None = None
    time_budget_s: float | None = None
    #: for a whole model (``kind="model"``): each kernel's share, trials, latency before/after
    model_tasks: tuple[ModelTask, ...] = ()
    #: for a whole model: each kernel's work dir (its database, shared with any model and any
    #: ``%mlc_tune`` of the same kernel), and the seconds of each phase of the run (``plan``:
    #: default build and profile, ``tasks``, ``final``: tuned model built and timed)
    task_work_dirs: dict[str, str] = field(default_factory=dict)
    phases: dict[str, float] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    #: what compiled the GPU candidates (``"nvrtc"`` or ``"nvcc"``; ``""`` on a CPU)
    compiler: str = ""
    #: ``"as written"`` when no candidate beat the kernel as written: ``mod`` is then the
    #: workload, ``trace`` the fastest candidate's schedule and ``best_candidate_s`` its latency
    kept: str = "tuned"
    best_candidate_s: float | None = None
    #: the imported model it came from (its PyTorch original is ``%mlc_time``'s reference)
    origin: Any = field(default=None, compare=False, repr=False)

    @property
    def peak_fraction(self) -> float | None:
        """The tuned kernel's share of this machine's fp32 peak (``None`` when unknown)."""
        gflops = self.best_gflops
        return gflops / self.peak_gflops if gflops and self.peak_gflops else None

    @property
    def measurable(self) -> bool | None:
        """Whether tuned and baseline differ by more than their runs vary (their ranges of
        median ± standard deviation do not meet, the rule ``%mlc_time``'s ranking uses);
        ``None`` when a spread is unknown."""
        tuned, base = self.timing, self.baseline_timing
        if tuned is None or base is None or tuned.std_s is None or base.std_s is None:
            return None
        if not tuned.median_s or not base.median_s:
            return None
        return abs(tuned.median_s - base.median_s) > tuned.std_s + base.std_s

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
