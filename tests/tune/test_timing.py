"""The untuned baseline of a tuning result: timed like ``%mlc_time``, but bounded in time."""

from __future__ import annotations

import tvm
from build_support import matmul

from mlc_jupyter.tune import timing
from mlc_jupyter.tune.options import tuning_target


def _workload():
    return tvm.IRModule({"main": matmul(64)})


def test_a_quick_baseline_is_sampled_as_mlc_time_samples_it():
    result = timing.baseline_timing(_workload(), tuning_target(None))
    assert result is not None and result.median_s > 0
    assert result.runs == 5  # %mlc_time's five samples, each a calibrated loop


def test_a_slow_baseline_is_timed_by_one_call(monkeypatch):
    monkeypatch.setattr(timing, "SLOW_BASELINE_S", 0.0)  # every kernel counts as slow
    result = timing.baseline_timing(_workload(), tuning_target(None))
    assert result is not None and result.median_s > 0
    assert (result.runs, result.number) == (1, 1)
