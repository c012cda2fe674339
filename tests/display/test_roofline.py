"""The roofline chart and this machine's limits as text and SVG (limits made here, no TVM)."""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET

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
    assert svg.count("data-dot=") == 1 and "tuned 85%" in svg


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


#: A six-way race of one model: every variant at the same intensity, rates close together.
RACE = [
    RooflinePoint("mlp_model", 0.5, 7.2, "torch"),
    RooflinePoint("mlp_model compiled", 0.5, 9.0, "torch"),
    RooflinePoint("MLPModule_lib", 0.5, 12.0),
    RooflinePoint("MLPModuleHighLevel_lib", 0.5, 12.5),
    RooflinePoint("mlp_fx", 0.5, 14.4),
    RooflinePoint("mlp_relax", 0.5, 14.0),
]


def _dots_and_labels(svg: str) -> tuple[dict[str, tuple], dict[str, tuple]]:
    """Each dot's centre and look (tag, fill, stroke), and each in-plot label's box, by point."""
    root = ET.fromstring(svg)  # noqa: S314  # the chart this test made
    ns = "{http://www.w3.org/2000/svg}"
    dots, labels = {}, {}
    for g in root.iter(f"{ns}g"):
        if "data-dot" not in g.attrib:
            continue
        (shape,) = list(g)
        if shape.tag.endswith("circle"):
            centre = (float(shape.get("cx")), float(shape.get("cy")))
        elif shape.tag.endswith("rect"):
            w = float(shape.get("width"))
            centre = (float(shape.get("x")) + w / 2, float(shape.get("y")) + w / 2)
        else:
            xy = [tuple(map(float, c.split(","))) for c in shape.get("points").split()]
            centre = (sum(x for x, _ in xy) / len(xy), sum(y for _, y in xy) / len(xy))
        look = (shape.tag, shape.get("fill"), shape.get("stroke"))
        dots[g.get("data-dot")] = (centre, look)
    for t in root.iter(f"{ns}text"):
        if "data-label-for" in t.attrib:
            x, y, width = float(t.get("x")), float(t.get("y")), 6.7 * len(t.text)
            labels[t.get("data-label-for")] = (x, y - 10, x + width, y + 2)
    return dots, labels


@pytest.mark.parametrize(
    "points",
    [RACE, RACE[:2] + RACE[-1:] + [RooflinePoint("mlp_relax_tuned", 0.5, 14.2, "tuned")]],
    ids=["six-way race", "tuned race"],
)
def test_every_dot_of_a_crowded_race_has_its_own_look_and_a_label_by_it(points):
    svg = roofline_svg(points, LIMITS, 2)
    dots, labels = _dots_and_labels(svg)
    assert len(dots) == len(points)
    assert len({look for _, look in dots.values()}) == len(points)  # colour and marker differ
    centres = [c for c, _ in dots.values()]
    assert all(
        math.dist(a, b) >= 9 for i, a in enumerate(centres) for b in centres[i + 1 :]
    )  # no dot hides another
    in_legend = set(re.findall(r'data-legend-for="(\d+)"', svg))
    for key, (centre, _) in dots.items():
        if key in in_legend and key not in labels:
            continue
        box = labels[key]
        near = max(
            box[0] - centre[0], 0, centre[0] - box[2], box[1] - centre[1], 0, centre[1] - box[3]
        )
        assert near <= 60, f"{points[int(key)].name}'s label is {near:.0f} px from its dot"
        for other, other_box in labels.items():
            assert other == key or not (
                box[0] < other_box[2] and other_box[0] < box[2]
                and box[1] < other_box[3] and other_box[1] < box[3]
            ), f"{points[int(key)].name}'s label covers {points[int(other)].name}'s"  # fmt: skip
    for key, box in labels.items():  # a label away from its dot has a line to it
        centre = dots[key][0]
        away = max(box[0] - centre[0], centre[0] - box[2], box[1] - centre[1], centre[1] - box[3])
        if away > 10:
            assert f'data-leader-for="{key}"' in svg, points[int(key)].name
    assert len(labels) + len(in_legend - set(labels)) == len(points)
