"""The roofline chart and this machine's limits as text and SVG (limits made here, no TVM)."""

from __future__ import annotations

import re

import pytest

from mlc_jupyter.display.roofline import (
    RooflinePoint,
    limits_bundle,
    limits_text,
    roofline_svg,
    roofline_text,
)
from mlc_jupyter.measure.machine import MachineLimits

LIMITS = MachineLimits(
    machine="a CPU | znver4 | 2 cores | TVM 0.27",
    cores=2,
    peak_gflops={1: {128: 60.0, 256: 120.0, 512: 120.0}, 2: {128: 120.0, 256: 240.0, 512: 240.0}},
    bandwidth_gbs={1: 20.0, 2: 24.0},
    measured_at="2026-11-23T20:00:00",
    seconds=1.2,
    path="/cache/machine.json",
)


def test_the_limits_pick_the_nearest_core_count_and_the_widest_vectors():
    assert LIMITS.peak() == 240.0 and LIMITS.peak(1) == 120.0 and LIMITS.peak(8) == 240.0
    assert LIMITS.peak(2, bits=128) == 120.0 and LIMITS.bandwidth(1) == 20.0
    assert LIMITS.roof(1.0) == pytest.approx(24.0) and LIMITS.roof(100.0) == 240.0


def test_the_roofline_in_words_places_each_kernel_under_its_roof():
    points = [RooflinePoint("tuned", 170.0, 204.0), RooflinePoint("copy", 0.5, 6.0, "numpy")]
    text = roofline_text(points, LIMITS, 2)
    assert text.splitlines()[0].startswith("roofline: fp32 peak 240 GFLOP/s (2 cores)")
    assert "ridge at 10.0 flop/byte" in text
    assert (
        "tuned: 170.0 flop/byte, 204.0 GFLOP/s = 85% of peak, 85% of its roof (compute-bound)"
        in text
    )
    assert "copy: 0.5 flop/byte, 6.0 GFLOP/s = 2% of peak, 50% of its roof (memory-bound)" in text


def test_the_chart_draws_both_ceilings_the_lower_ones_and_a_dot_per_kernel():
    svg = roofline_svg([RooflinePoint("tuned", 170.0, 204.0, "tuned")], LIMITS, 2)
    assert svg.startswith("<svg") and 'aria-label="roofline chart"' in svg
    assert "peak 240 GFLOP/s" in svg and "24 GB/s" in svg
    assert "128-bit or 1 core 120" in svg  # a lower compute ceiling, labelled once
    assert svg.count("<circle") == 1 and "tuned 85%" in svg


def test_a_busy_measurement_says_how_to_redo_it():
    busy = MachineLimits(**{**LIMITS.__dict__, "quiet": False})
    assert "%mlc_machine --refresh" in roofline_text([], busy, 2)
    text = limits_text(busy)
    assert "cached in /cache/machine.json" in text and "%mlc_machine --refresh" in text
    assert "240.0" in text and "24.0 GB/s" in text
    assert "<svg" in limits_bundle(busy)["text/html"]


def test_a_kernel_just_above_a_lower_ceiling_gets_its_label_off_the_dashed_line():
    svg = roofline_svg([RooflinePoint("MyModule_tuned", 170.0, 126.0, "tuned")], LIMITS, 2)
    level = float(re.search(r'<line [^>]*y1="([\d.]+)"', svg).group(1))
    baseline = float(re.search(r'<text [^>]*y="([\d.]+)"[^>]*>MyModule_tuned', svg).group(1))
    assert not baseline - 10 <= level <= baseline + 2  # the label's glyphs do not cross the line
