"""Timing reports as a table, an SVG bar chart and plain text (results made here, no TVM)."""

from __future__ import annotations

from mlc_jupyter.display.timing import (
    CHAR_PX,
    bar_chart_svg,
    bars_svg,
    elide_middle,
    report_bundle,
    report_text,
)
from mlc_jupyter.measure.compare import TimingReport
from mlc_jupyter.measure.timer import Timing


def _timing(name: str, median_s: float | None, **kw) -> Timing:
    return Timing(name, median_s, median_s, 0.0, median_s, 5, **kw)


REPORT = TimingReport(
    (
        _timing("naive", 2e-3, gflops=1.0, speedup=1.0, correct=True, target="llvm -num-cores=2"),
        _timing("tiled", 5e-4, gflops=4.0, speedup=4.0, correct=True),
        _timing("numpy", None, kind="numpy", error="NameError: np2"),
    ),
    warnings=("naive and tiled are closer than their runs vary",),
)


def test_the_text_table_has_one_aligned_row_per_variant_then_errors_and_warnings():
    lines = report_text(REPORT).splitlines()
    assert lines[0].split()[:3] == ["variant", "median", "mean"]
    assert lines[1].startswith("naive") and "2.000 ms" in lines[1] and "yes" in lines[1]
    assert lines[2].startswith("tiled") and "500.0 us" in lines[2] and "4.00x" in lines[2]
    assert lines[1].index("ms") == lines[2].index("us")  # columns line up
    assert "target: llvm -num-cores=2" in lines
    assert "numpy: NameError: np2" in lines
    assert lines[-1] == "warning: naive and tiled are closer than their runs vary"


def test_the_bar_chart_draws_only_timed_variants_longest_for_the_slowest():
    svg = bar_chart_svg(REPORT)
    assert svg.startswith("<svg") and "naive" in svg and "tiled" in svg
    widths = [float(w) for w in __import__("re").findall(r'<rect[^>]*width="([\d.]+)"', svg)]
    assert len(widths) == 2 and widths[0] > widths[1]


def test_the_bundle_carries_html_and_the_plain_fallback():
    bundle = report_bundle(REPORT)
    assert set(bundle) == {"text/html", "text/plain"}
    assert "<table" in bundle["text/html"] and "<svg" in bundle["text/html"]
    assert bundle["text/plain"] == report_text(REPORT)


def test_a_column_empty_in_every_row_is_left_out_and_the_spread_is_shown_as_plus_minus():
    rows = (Timing("a", 1e-3, 1e-3, 1e-4, 9e-4, 5, results_s=(1e-3,) * 5),
            Timing("b", 2e-3, 2e-3, 0.0, 2e-3, 5, results_s=(2e-3,) * 5))  # fmt: skip
    head = report_text(TimingReport(rows)).splitlines()[0].split()
    assert head == ["variant", "median", "±", "mean", "min", "runs", "speed-up", "correct"]
    assert "±10%" in report_text(TimingReport(rows))


def test_notes_inform_and_warnings_warn():
    report = TimingReport(REPORT.timings, ("a and b may swap",), notes=("compiled in 11.2 s",))
    text = report_text(report)
    assert "note: compiled in 11.2 s" in text and "warning: compiled" not in text
    assert "warning: a and b may swap" in text


def test_bar_labels_take_the_width_of_the_longest_and_a_very_long_one_is_elided_in_the_middle():
    name = "fused_conv2d6_add_relu3_" + "x" * 60 + "_end"
    svg = bars_svg([("torch.compile(mlp_model)", 2.0, "2 ms", "torch"), (name, 1.0, "1 ms", "tvm")])
    assert "torch.compile(mlp_model)</text>" in svg  # whole
    assert f"<title>{name}</title>fused_conv2d6" in svg and "…" in svg and "x_end</text>" in svg
    assert elide_middle("abcdefghij", 5) == "ab…ij"
    label_x = float(bars_svg([("a", 1.0, "1 ms", "tvm")]).split('x="')[1].split('"')[0])
    assert label_x == round(CHAR_PX) + 8 - 4  # a short label: a narrow column


def test_a_race_on_the_gpu_names_each_rows_device_in_a_column():
    gpu = TimingReport(
        (
            _timing("mlp_lib", 8e-6, correct=True, device="cuda:0"),
            _timing("mlp", 4e-5, correct=True, kind="torch", device="cuda:0"),
            _timing("numpy", 2e-5, correct=True, kind="numpy", device="cpu"),
        )
    )
    lines = report_text(gpu).splitlines()
    assert lines[0].split()[:2] == ["variant", "device"]
    assert lines[1].split()[:2] == ["mlp_lib", "cuda:0"] and lines[3].split()[:2] == [
        "numpy",
        "cpu",
    ]
    assert "device" not in report_text(REPORT).splitlines()[0]  # a CPU race keeps its columns
