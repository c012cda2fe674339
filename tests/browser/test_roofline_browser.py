"""% of peak and the roofline chart in a real JupyterLab (Debian's Chromium): ``%mlc_tune``'s
summary and ``%mlc_time``'s table, each with its chart.

Uses the shared harness of ``conftest.py`` and leaves ``test-output/tune_roofline.png`` and
``test-output/time_roofline.png``.
"""

from __future__ import annotations

import pytest
from lab_support import open_notebook, run_all_cells, screenshot
from trace_support import book_matmul

pytestmark = pytest.mark.browser

CELLS = [
    "%load_ext mlc_jupyter",
    "%%tir --quiet" + book_matmul(256),
    "%mlc_tune MyModule --trials 32 --fresh",
    '%mlc_time MyModule MyModule_tuned --ref "A @ B"',
]


def test_tune_and_time_show_percent_of_peak_and_a_roofline_chart(lab_page):
    from playwright.sync_api import expect

    page = open_notebook(lab_page, CELLS, name="roofline.ipynb")
    run_all_cells(page, timeout_ms=600_000)
    outputs = page.locator(".jp-CodeCell .jp-OutputArea")
    tune, timing = outputs.nth(2), outputs.nth(3)
    for output in (tune, timing):
        expect(output.locator('svg[aria-label="roofline chart"]')).to_be_visible()
        expect(output).to_contain_text("GFLOP/s")
        expect(output).not_to_contain_text("Traceback")
    expect(tune).to_contain_text("of peak")
    expect(timing.locator("th", has_text="% peak")).to_be_visible()
    expect(timing).to_contain_text("roofline: fp32 peak")
    screenshot(tune, "tune_roofline")
    screenshot(timing, "time_roofline")
