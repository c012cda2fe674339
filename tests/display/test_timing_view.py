"""Timing reports as a table, an SVG bar chart and plain text (results made here, no TVM)."""

from __future__ import annotations

from mlc_jupyter.display.timing import bar_chart_svg, report_bundle, report_text
from mlc_jupyter.results import Timing, TimingReport


def _timing(name: str, median_s: float | None, **kw) -> Timing:
    return Timing(name, median_s, median_s, 0.0, median_s, 5, **kw)


REPORT = TimingReport(
    (
        _timing("naive", 2e-3, gflops=1.0, speedup=1.0, correct=True, target="llvm -num-cores=2"),
        _timing("tiled", 5e-4, gflops=4.0, speedup=4.0, correct=True),
        _timing("numpy", None, kind="numpy", error="NameError: np2"),
    ),
    warnings=("tiled: runs vary by 30% (std / median); the machine may be busy",),
)


def test_the_text_table_has_one_aligned_row_per_variant_then_errors_and_warnings():
    lines = report_text(REPORT).splitlines()
    assert lines[0].split()[:3] == ["variant", "median", "mean"]
    assert lines[1].startswith("naive") and "2.000 ms" in lines[1] and "yes" in lines[1]
    assert lines[2].startswith("tiled") and "500.0 us" in lines[2] and "4.00x" in lines[2]
    assert lines[1].index("ms") == lines[2].index("us")  # columns line up
    assert "target: llvm -num-cores=2" in lines
    assert "numpy: NameError: np2" in lines
    assert lines[-1].startswith("warning: tiled: runs vary by 30%")


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
