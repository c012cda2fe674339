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
    machine._MEMO.clear()
    redone = machine.machine_limits()
    assert redone.peak(cores) > 1.0
    assert redone.machine in machine._REMEASURED
    assert machine.machine_limits() is redone  # not again in this process


def test_core_counts_cover_one_all_and_powers_of_two():
    assert machine.core_counts(1) == [1]
    assert machine.core_counts(2) == [1, 2]
    assert machine.core_counts(12) == [1, 2, 4, 8, 12]
