"""The measure callback that writes records, tracks the best, and reports progress.

It replaces MetaSchedule's ``AddToDatabase`` + ``RemoveBuildArtifact``: every measured candidate
is committed to the JSON database at once (a killed kernel loses at most the batch in flight),
candidates known from an earlier run are not committed twice, and after each batch one
:class:`~mlc_jupyter.tune.report.TuneProgress` event goes to ``on_progress``. When the run must
stop (Ctrl-C, or ``on_progress`` raised ``KeyboardInterrupt``), or the run's
:class:`~mlc_jupyter.tune.budget.Deadline` or budget says so (its time is up, the search has
converged), it raises :class:`StopTuning` *after* the batch
is saved.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from ...tvm_compat import derived_object, metaschedule
from ..budget import Budget, Deadline, has_converged, next_round_fits
from ..report import TuneProgress
from .run_state import BUILD_FAILED, INTERRUPTED, KNOWN_PREFIX, Shared, StopTuning

ms = metaschedule()


def time_left(
    batch_ends: list[tuple[float, int]], elapsed: float, fresh: int, now: float, done: int,
    total: int,
) -> float | None:  # fmt: skip
    """Seconds until ``total`` trials, at the pace measured between the ends of batches
    (``(time, trials done)`` each); ``elapsed`` and ``fresh`` (trials this run measured) give
    the pace until a second batch has ended.

    The first batch also paid for the start (the design space, the first compiles, the default
    schedule's seed): a pace that counted it read several times too slow.
    """
    if len(batch_ends) >= 2:
        (t0, n0), (t1, n1) = batch_ends[0], batch_ends[-1]
        if n1 > n0:  # what the batch in flight has measured is on its way: counted from t1
            return max(0.0, (t1 - t0) / (n1 - n0) * max(0, total - n1) - (now - t1))
    left = max(0, total - done)
    return elapsed / fresh * left if fresh > 0 else None


@derived_object
class RecordAndReport(ms.measure_callback.PyMeasureCallback):
    """Commit each batch to the database and emit one progress event."""

    def __init__(
        self,
        shared: Shared,
        database: Any,
        budget: Budget,
        deadline: Deadline,
        done_before: int,
        on_progress: Callable[[TuneProgress], None] | None,
        log_path: str,
        work_dir: str,
        curves: dict[str, list[tuple[int, float]]],
        peak_gflops: float | None = None,
        per_iter: int = 64,
        flops: dict[str, float | None] | None = None,
    ) -> None:
        super().__init__()
        self.shared = shared
        self.database = database
        self.budget = budget
        self.deadline = deadline
        self.trials_total = budget.trials
        self.peak_gflops = peak_gflops
        self.per_iter = per_iter
        self.done_before = done_before
        self.done = done_before
        self.on_progress = on_progress
        self.log_path = log_path
        self.work_dir = work_dir
        self.curves = curves
        self.start = time.perf_counter()
        self.round_end = self.start
        #: (time, trials done) at the end of each batch: the pace the time left comes from
        self.batch_ends: list[tuple[float, int]] = []
        self.new_done = 0
        self.reused = 0
        self.in_batch = 0
        self.last_tick = 0.0
        self.flops: dict[str, float | None] = dict(flops or {})  # known before the first batch
        shared.tick = self._tick

    def _tick(self, task: str) -> None:
        """One candidate measured inside a batch: report now and then, not every time."""
        self.in_batch += 1
        now = time.perf_counter()
        if now - self.last_tick < 0.5:
            return
        self.last_tick = now
        best = self.shared.best.get(task)
        curve = tuple(self.curves.get(task, ()))
        flop = self.flops.get(task)
        self._emit(task, best, flop, curve, self.done + self.in_batch)

    def apply(
        self,
        task_scheduler: Any,
        task_id: int,
        measure_candidates: list[Any],
        builder_results: list[Any],
        runner_results: list[Any],
    ) -> None:
        record = task_scheduler.tasks_[task_id]
        ctx = record.ctx
        task = str(ctx.task_name)
        flop = float(record.flop) if record.flop else None
        self.flops[task] = flop
        self.in_batch = 0
        workload = self.database.commit_workload(ctx.mod)
        for cand, built, ran in zip(
            measure_candidates, builder_results, runner_results, strict=False
        ):
            path = str(built.artifact_path) if built.artifact_path is not None else ""
            if path.startswith(KNOWN_PREFIX):
                self.reused += 1
                continue
            if path and os.path.isfile(path):
                os.remove(path)
            secs = [float(x) for x in ran.run_secs] if ran.run_secs is not None else None
            if ran.error_msg is not None and str(ran.error_msg) == INTERRUPTED:
                continue
            failed_build = str(ran.error_msg or "").startswith(BUILD_FAILED)
            if built.error_msg is None and ran.error_msg is not None and not failed_build:
                self.shared.note_error("run", str(ran.error_msg))
            self.database.commit_tuning_record(
                ms.database.TuningRecord(
                    trace=cand.sch.trace,
                    workload=workload,
                    run_secs=secs,
                    target=ctx.target,
                    args_info=cand.args_info,
                )
            )
            self.new_done += 1
            if secs:
                mean = sum(secs) / len(secs)
                best = self.shared.best.get(task, float("inf"))
                self.shared.best[task] = min(best, mean)
        self.done += len(measure_candidates)
        self.batch_ends.append((time.perf_counter(), self.done))
        best = self.shared.best.get(task)
        curve = self.curves.setdefault(task, [])
        if best is not None:
            curve.append((self.done, best))
        self._emit(task, best, flop, tuple(curve), self.done)
        if self.shared.stop.is_set():
            raise StopTuning("interrupted")
        reason = self._budget_spent()
        if reason:
            self.shared.stop_reason = reason
            raise StopTuning(reason)

    def _budget_spent(self) -> str:
        """``"time"`` or ``"converged"`` when the run should end after this batch, else ``""``.

        Time is up also when too little is left for another round like this one (its candidates
        would be cut off unmeasured at the deadline): the time goes to what comes after.
        """
        now = time.perf_counter()
        round_s, self.round_end = now - self.round_end, now
        if self.deadline.limited:
            left = self.deadline.left_s()
            if left <= 0 or not next_round_fits(left, round_s):
                return "time"
        if self.budget.converge and self.curves:
            new = self.done - self.done_before
            if all(
                has_converged(curve, self.done, new, self.per_iter)
                for curve in self.curves.values()
            ):
                return "converged"
        return ""

    def _emit(
        self, task: str, best: float | None, flop: float | None, curve: tuple, done: int
    ) -> None:
        now = time.perf_counter()
        elapsed = now - self.start
        eta = None
        if self.trials_total is not None:
            eta = time_left(self.batch_ends, now - self.start, done - self.done_before,
                            now, done, self.trials_total)  # fmt: skip
        if self.deadline.limited:
            left = max(0.0, self.deadline.left_s())
            eta = left if eta is None else min(eta, left)
        gflops = flop / best / 1e9 if flop and best else None
        event = TuneProgress(
            task=task,
            trials_done=done if self.trials_total is None else min(done, self.trials_total),
            trials_total=self.trials_total,
            best_latency_s=best,
            best_gflops=gflops,
            elapsed_s=elapsed,
            eta_s=eta,
            curve=curve,
            build_errors=self.shared.build_errors,
            run_errors=self.shared.run_errors,
            first_error=self.shared.first_error,
            reused=self.reused,
            resumed_from=self.done_before,
            log_path=self.log_path,
            work_dir=self.work_dir,
            peak_fraction=gflops / self.peak_gflops if gflops and self.peak_gflops else None,
            time_budget_s=self.deadline.seconds,
            compiler=self.shared.compiler,
        )
        if self.on_progress is None:
            return
        try:
            self.on_progress(event)
        except KeyboardInterrupt:
            self.shared.stop.set()
