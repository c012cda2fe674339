"""The per-kernel breakdown as text and HTML: the roof above the table, each kernel's bound and
share of its roof, the columns consistent between the two (a real MLP build profiled here)."""

from __future__ import annotations

import dataclasses
import re

import pytest

from mlc_jupyter.display.profile import profile_html, profile_text
from mlc_jupyter.measure.profile import KernelProfile, KernelTime


@pytest.fixture
def mlp_profile(book_mlp_profile) -> KernelProfile:
    return book_mlp_profile  # made once per session (conftest.py)


def _table(text: str) -> tuple[list[str], list[list[str]]]:
    lines = text.splitlines()
    head_at = next(i for i, line in enumerate(lines) if line.startswith("kernel "))
    head = re.split(r"\s{2,}", lines[head_at].strip())
    rows = [re.split(r"\s{2,}", line.strip()) for line in lines[head_at + 1 :]]
    return head, [r for r in rows if len(r) == len(head)]


def test_the_breakdown_names_each_kernels_bound_and_share_of_its_roof(mlp_profile):
    text = profile_text(mlp_profile)
    assert re.search(r"roofline: fp32 peak \d+ GFLOP/s \(\d+ cores?\), bandwidth [\d.]+ GB/s, "
                     r"ridge at [\d.]+ flop/byte", text)  # fmt: skip
    head, rows = _table(text)
    assert head == ["kernel", "calls", "time/run", "share", "GFLOP/s", "flop/byte", "bound",
                    "% of roof"]  # fmt: skip
    kernels = [r for r in rows if r[0] in {k.name for k in mlp_profile.kernels}]
    assert len(kernels) == 2
    for row in kernels:
        kernel = next(k for k in mlp_profile.kernels if k.name == row[0])
        share = mlp_profile.roof_share(kernel)
        # a batch-1 dense layer: memory-bound (or faster than memory: its weights stay cached)
        assert row[6] == ("cache" if share > 1 else "memory")
        assert row[7] == f"{share:.0%}"
    assert ("cache: memory-bound, yet faster" in text) == any(r[6] == "cache" for r in kernels)


def test_text_and_html_show_the_same_columns_and_lines(mlp_profile):
    text, page = profile_text(mlp_profile), profile_html(mlp_profile)
    head, rows = _table(text)
    assert re.findall(r"<th[^>]*>([^<]*)</th>", page) == head
    body = page[page.index("<tbody>") : page.index("</tbody>")]
    cells = [re.findall(r"<td[^>]*>([^<]*)</td>", row) for row in body.split("</tr>")[:-1]]
    assert cells == rows
    for line in text.splitlines():
        if not line.startswith(("kernel ", *(r[0] + " " for r in rows))):
            assert line.replace("'", "&#x27;") in page


def test_without_the_machine_limits_the_bound_columns_go_and_the_breakdown_says_why(mlp_profile):
    unknown = dataclasses.replace(
        mlp_profile, peak_gflops=None, bandwidth_gbs=None, no_roof="no roof: not measured here"
    )
    text = profile_text(unknown)
    head, _ = _table(text)
    assert "bound" not in head and "% of roof" not in head and "GFLOP/s" in head
    assert text.splitlines()[1] == "no roof: not measured here"
    assert "bound" not in profile_html(unknown)


def test_a_compute_bound_kernel_shows_its_share_of_the_peak():
    dense = KernelTime("big_matmul", 3, 0.01, flops=2e9, bytes=1.2e7)
    profile = KernelProfile(
        "m", (dense,), 0.0, 0.01, 1, peak_gflops=400.0, bandwidth_gbs=20.0, cores=2
    )
    text = profile_text(profile)
    assert "roofline: fp32 peak 400 GFLOP/s (2 cores), bandwidth 20.0 GB/s, ridge at 20.0" in text
    _, rows = _table(text)
    assert rows[0][4:] == ["200.0", "166.67", "compute", "50%"]


def test_a_gpu_profile_names_no_cores():
    k = KernelTime("fused_dense", 1, 2e-5, flops=2e6, bytes=4e6)
    profile = KernelProfile("m", (k,), 0.0, 2e-5, 1, peak_gflops=50000.0, bandwidth_gbs=3000.0)
    text = profile_text(profile)
    assert "roofline: fp32 peak 50000 GFLOP/s, bandwidth 3000.0 GB/s, ridge at 16.7" in text
    assert _table(text)[1][0][-2:] == ["memory", "7%"]  # 200 GB/s of 3000


def test_kernels_that_outlast_the_whole_model_get_a_warning_with_the_measured_reason():
    # kernels timed at 3 ms against a model timed at 2 ms as a whole
    k = KernelTime("fused_matmul", 1, 3e-3, flops=2e8, bytes=1e6)
    busy = KernelProfile(
        "m", (k,), 0.0, 2e-3, 3, peak_gflops=200.0, bandwidth_gbs=40.0, cores=2, others_share=0.8
    )
    quiet = dataclasses.replace(busy, others_share=0.01)
    fits = dataclasses.replace(busy, total_s=3.1e-3)
    assert busy.disturbed and quiet.disturbed and not fits.disturbed
    # another process had the cores: the profile says so, with how much it used
    busy_line = "warning: the kernels took 1.5x the whole model: other processes used 80% of a core"
    assert busy_line in profile_text(busy) and busy_line in profile_html(busy)
    # a quiet machine is never blamed: the excess is the method's (each kernel alone, cold)
    text = profile_text(quiet)
    assert "busy" not in text and "other processes used" not in text
    assert "the machine was quiet meanwhile: each kernel is timed alone" in text
    assert "warning" not in profile_text(fits) and "busy" not in profile_text(fits)
    assert "median of 3 runs)" in profile_text(fits)


def test_the_time_beyond_the_kernels_is_one_row_that_says_what_it_holds():
    # kernels alone 2 ms of a model timed at 2.5 ms as a whole
    k = KernelTime("fused_conv2d", 4, 2e-3, flops=8e8, bytes=4e7)
    profile = KernelProfile(
        "m", (k,), 5e-4, 2.5e-3, 3, peak_gflops=400.0, bandwidth_gbs=40.0, cores=2
    )
    text = profile_text(profile)
    _, rows = _table(text)
    assert rows[-1][:4] == ["the model beyond its kernels", "-", "500.0 us", "20.0%"]
    # not blamed on the VM alone: a kernel timed alone finds its input cached
    assert "the VM's own instructions (allocations, shape checks), and inputs that come " in text
    assert "VM between kernels" not in text
    none_beyond = dataclasses.replace(profile, beyond_kernels_s=0.0, total_s=2e-3)
    assert "beyond its kernels" not in profile_text(none_beyond)
