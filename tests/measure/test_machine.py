"""This machine's limits: measured once, cached in a documented file, refreshed on request."""

from __future__ import annotations

import json

import pytest

from mlc_jupyter.config import machine_limits_path
from mlc_jupyter.measure import machine


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MLC_JUPYTER_CACHE", str(tmp_path))
    monkeypatch.setattr(machine, "_MEMO", {})
    monkeypatch.setattr(machine, "_REMEASURED", set())
    monkeypatch.setattr(machine, "_BEATEN", set())
    return tmp_path


def test_limits_are_measured_once_and_cached_per_machine(fresh_cache):
    assert machine.cached_machine_limits() is None
    limits = machine.machine_limits()
    assert not limits.cached
    assert machine_limits_path() == fresh_cache / "machine.json"
    stored = json.loads(machine_limits_path().read_text())
    assert list(stored) == [limits.machine]
    cores = limits.cores
    assert set(limits.peak_gflops) >= {1, cores}
    assert all(g > 0 for widths in limits.peak_gflops.values() for g in widths.values())
    assert limits.bandwidth(1) > 0

    machine._MEMO.clear()  # a new process reads the file instead of measuring
    again = machine.cached_machine_limits()
    assert again.cached and again.machine == limits.machine
    assert again.peak(cores) == pytest.approx(limits.peak(cores), rel=1e-3)


def test_a_second_ask_in_the_same_process_says_the_limits_come_from_the_cache(fresh_cache):
    first = machine.machine_limits()
    again = machine.machine_limits()
    assert not first.cached and again.cached
    assert again.peak(first.cores) == first.peak(first.cores)


def test_refresh_measures_again(fresh_cache):
    first = machine.machine_limits()
    second = machine.machine_limits(refresh=True)
    assert not second.cached
    assert second.measured_at >= first.measured_at


def test_the_roofline_is_the_lower_of_bandwidth_and_peak(fresh_cache):
    limits = machine.machine_limits()
    peak, bandwidth = limits.peak(), limits.bandwidth()
    ridge = peak / bandwidth
    assert limits.roof(ridge / 10) == pytest.approx(bandwidth * ridge / 10)
    assert limits.roof(ridge * 10) == pytest.approx(peak)
    assert machine.percent_of_peak(peak / 2, limits, limits.cores) == pytest.approx(0.5)


def test_a_busy_measurement_is_redone_once_and_keeps_the_better_figures(fresh_cache, monkeypatch):
    limits = machine.machine_limits()
    cores = limits.cores
    busy = {c: dict.fromkeys(w, 1.0) for c, w in limits.peak_gflops.items()}
    machine._write_cache(machine.dataclasses.replace(limits, peak_gflops=busy, quiet=False))
    machine._MEMO.clear()  # a later process: it reads the busy entry and measures once more
    machine._REMEASURED.clear()
    redone = machine.machine_limits()
    assert redone.peak(cores) > 1.0
    assert redone.machine in machine._REMEASURED
    kept = machine.machine_limits()  # not again in this process
    assert kept.measured_at == redone.measured_at and kept.cached


def test_core_counts_cover_one_all_and_powers_of_two():
    assert machine.core_counts(1) == [1]
    assert machine.core_counts(2) == [1, 2]
    assert machine.core_counts(12) == [1, 2, 4, 8, 12]


def _stale(limits, gflops: float):
    """The cache as a busy machine left it in another process: a peak of ``gflops``."""
    low = {c: dict.fromkeys(w, gflops) for c, w in limits.peak_gflops.items()}
    machine._write_cache(machine.dataclasses.replace(limits, peak_gflops=low))
    machine._MEMO.clear()
    return machine.cached_machine_limits()


def test_each_measurement_says_when_and_under_what_load(fresh_cache):
    from mlc_jupyter.display.roofline import limits_text, roofline_text

    limits = machine.machine_limits()
    assert limits.load is not None and limits.others_share is not None
    assert limits.quiet == (limits.others_share < machine.QUIET_SHARE)
    said = f"measured {limits.measured_at}, load {limits.load:.2f}, other processes"
    assert said in limits.measured() and said in limits_text(limits)
    assert said in roofline_text([], limits, limits.cores)
    stored = json.loads(machine_limits_path().read_text())[limits.machine]
    assert stored["load"] == pytest.approx(limits.load, abs=1e-3)
    machine._MEMO.clear()  # and the cache keeps them for later processes
    assert machine.cached_machine_limits().measured() == limits.measured()


def test_a_rate_above_the_peak_measures_it_again_once_and_says_why(fresh_cache):
    cores = machine.machine_limits().cores
    stale = _stale(machine.machine_limits(), 1.0)
    # within the peak: nothing happens
    assert machine.checked_against(stale, 1.0, cores, "the row x") is stale
    again = machine.checked_against(stale, 5.0, cores, "the row x")
    assert again.peak(cores) > 1.0  # measured again, for real
    assert again.remeasured.startswith("the row x ran at 5.0 GFLOP/s, above the peak of 1.0")
    assert json.loads(machine_limits_path().read_text())[again.machine]["remeasured"]
    # once per process: a figure does not keep changing under the runs that use it
    kept = machine.checked_against(again, 1e6, cores, "the row y")
    assert kept.measured_at == again.measured_at and kept.remeasured == again.remeasured


def test_no_row_of_a_race_shows_more_than_the_peak_after_a_stale_one(fresh_cache):
    from build_support import mm_relu

    from mlc_jupyter.display.timing import report_text
    from mlc_jupyter.measure import Sampling, time_functions

    limits = machine.machine_limits()
    _stale(limits, 0.01)  # far below any kernel: measured while another job had the cores
    report = time_functions({"mm": mm_relu()}, sampling=Sampling(repeat=2, min_repeat_ms=5))
    assert report.limits.remeasured.startswith("the row mm ran at")
    assert report.peak_fraction(report["mm"]) <= 1 + machine.ABOVE_PEAK
    assert not any("of this machine's fp32 peak" in w for w in report.warnings)
    assert "% peak" in report_text(report)


def test_a_winograd_build_above_the_peak_on_the_work_as_written_gets_a_note_not_a_warning(
    fresh_cache,
):
    """A race rates a model on its FLOPs as written; a build that computes its convolutions with
    Winograd does fewer, so it may read above the peak. That is no stale peak to measure again,
    and no warning: a note gives both counts. The row is timed once and checked against a peak
    set from it: timed twice, a noisy host moved the second row out of the window."""
    import dataclasses

    import torch

    from mlc_jupyter.compilation import build_module, winograd
    from mlc_jupyter.display.timing import report_text
    from mlc_jupyter.measure import Sampling, compare, time_functions
    from mlc_jupyter.models import import_model

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.ReLU(), torch.nn.Conv2d(32, 32, 3, padding=1)).eval()
    built = build_module(import_model(model, torch.randn(1, 32, 28, 28)), persist=False)
    assert any(winograd.tile_of(built.mod[gv]) for gv, _ in built.mod.functions_items()
               if gv.name_hint.startswith(("conv2d_winograd", "fused_conv2d_winograd")))  # fmt: skip
    report = time_functions({"conv": built}, sampling=Sampling(repeat=3, min_repeat_ms=5))
    row = report["conv"]
    assert row.arithmetic_flops < row.flops  # F(4x4): fewer multiplications than written
    # a peak between the rate of the arithmetic done and the rate on the work as written
    stale = _stale(machine.machine_limits(), (row.arithmetic_gflops * row.gflops) ** 0.5)
    limits, warnings, notes = compare._checked_peak(stale, report.timings, report.cores)
    assert not limits.remeasured  # the peak did not read low: nothing to measure again
    assert not warnings
    note = next(n for n in notes if n.startswith("conv: "))
    assert "of the peak on the FLOPs of the model as written" in note
    assert f"its kernels compute {row.arithmetic_flops / 1e9:.2f} GFLOP" in note
    shown = dataclasses.replace(report, limits=limits, notes=report.notes + notes)
    assert note in report_text(shown)
    # a race under that peak reports what the check says of its own rows, whichever side of the
    # peak this host's second timing fell on
    again = time_functions({"conv": built}, sampling=Sampling(repeat=3, min_repeat_ms=5))
    _, said_warnings, said_notes = compare._checked_peak(again.limits, again.timings, again.cores)
    assert set(said_warnings) <= set(again.warnings) and set(said_notes) <= set(again.notes)
