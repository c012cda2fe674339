"""The untuned baseline of a tuning result: timed like ``%mlc_time``, but bounded in time."""

from __future__ import annotations

import tvm
from build_support import matmul
from timing_support import spy_on_kernel_timer

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


def _model_timing(median: float, std: float):
    from mlc_jupyter.measure.timer import Timing

    return Timing(
        "m", median, median, std, median - std, 3, results_s=(median - std, median, median + std)
    )


def test_a_model_timed_slower_than_its_kernels_say_is_timed_again_and_kept_default_if_still():
    from mlc_jupyter.tune.timing import ModelTimings, final_model_timing

    calls = []

    def slower_twice():  # the ResNet-18 of issue 34: kernels 0.3 ms faster, the model 2 ms slower
        calls.append(1)
        return ModelTimings(_model_timing(18.95e-3, 0.2e-3), _model_timing(20.996e-3, 0.2e-3))

    verdict = final_model_timing(slower_twice, expected_gain_s=0.3e-3)
    assert len(calls) == 2 and verdict.keep_default
    assert "timed slower than the default build" in verdict.notes[0]
    assert verdict.notes[1].startswith("kept the default build: the tuned model timed slower")


def test_a_busy_spell_that_passes_keeps_the_tuned_model_without_a_note():
    from mlc_jupyter.tune.timing import ModelTimings, final_model_timing

    runs = iter([ModelTimings(_model_timing(19e-3, 0.2e-3), _model_timing(21e-3, 0.2e-3)),
                 ModelTimings(_model_timing(19e-3, 0.2e-3), _model_timing(18.6e-3, 0.2e-3))])  # fmt: skip
    verdict = final_model_timing(lambda: next(runs), expected_gain_s=0.3e-3)
    assert not verdict.keep_default and verdict.notes == ()
    assert verdict.tuned.median_s == 18.6e-3


def test_within_the_spread_the_tuned_model_stays_and_nothing_is_timed_again():
    from mlc_jupyter.tune.timing import ModelTimings, final_model_timing

    calls = []

    def close():
        calls.append(1)
        return ModelTimings(_model_timing(19e-3, 1e-3), _model_timing(19.5e-3, 1e-3))

    verdict = final_model_timing(close, expected_gain_s=0.0)  # no kernel was kept tuned
    assert len(calls) == 1 and not verdict.keep_default and verdict.notes == ()


def test_without_time_for_a_second_timing_the_contradiction_is_said_at_once():
    from mlc_jupyter.tune.timing import ModelTimings, final_model_timing

    calls = []

    def slower():
        calls.append(1)
        return ModelTimings(_model_timing(19e-3, 0.1e-3), _model_timing(19.5e-3, 0.1e-3))

    verdict = final_model_timing(slower, expected_gain_s=0.3e-3, may_retime=lambda s: False)
    assert len(calls) == 1 and "yet the whole tuned model timed slower" in verdict.notes[0]


def test_a_cold_sample_is_single_calls_each_after_the_weights_are_flushed(monkeypatch):
    made = spy_on_kernel_timer(monkeypatch, timing)
    sample = timing.KernelSamplers(tuning_target(None), cold=True).add(_workload())
    seconds = [sample() for _ in range(2)]
    assert all(s > 0 for s in seconds)
    assert len(made) == 1 and made[0][1] and made[0][0] >= 3  # flushed before every call


def test_a_warm_sample_flushes_nothing(monkeypatch):
    made = spy_on_kernel_timer(monkeypatch, timing)
    sample = timing.KernelSamplers(tuning_target(None)).add(_workload())
    assert sample() > 0 and made == []


def test_a_whole_model_is_sampled_warm_even_when_asked_cold(monkeypatch, book_mlp):
    made = spy_on_kernel_timer(monkeypatch, timing)
    sample = timing.KernelSamplers(tuning_target(None), cold=True).add(book_mlp[1].mod)
    assert sample() > 0 and made == []  # a model's layers evict each other's weights themselves
