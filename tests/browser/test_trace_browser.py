"""The trace replay widget in a real JupyterLab driven by Debian's Chromium: step, edit, re-time.

Uses the shared harness of ``conftest.py`` (JupyterLab on loopback, Playwright + Chromium) and
leaves ``test-output/trace_replay.png``.
"""

from __future__ import annotations

import pytest
from lab_support import open_notebook, run_all_cells, screenshot
from trace_support import book_matmul

pytestmark = pytest.mark.browser

CELLS = [
    "%load_ext mlc_jupyter",
    "%%tir" + book_matmul(),
    """import tvm
sch = tvm.s_tir.Schedule(MyModule, seed=7)
b = sch.get_sblock("C", "main")
i, j, k = sch.get_loops(block=b)
j_factors = sch.sample_perfect_tile(loop=j, n=2)
j_0, j_1 = sch.split(loop=j, factors=j_factors)
sch.reorder(i, j_0, k, j_1)
sch.decompose_reduction(b, k)""",
    "%mlc_trace sch --mod MyModule --as best_mm",
]


def test_a_user_steps_edits_a_decision_and_retimes_in_jupyterlab(lab_page):
    from playwright.sync_api import expect

    page = open_notebook(lab_page, CELLS, name="trace_replay.ipynb")
    run_all_cells(page)
    widget = page.locator(".mlc-tr")
    expect(widget).to_be_visible(timeout=60_000)
    label = page.get_by_test_id("step-label")
    expect(label).to_have_text("step 6 / 6")
    ir = page.get_by_test_id("ir")
    expect(ir).to_contain_text("C_update")  # positive control for the absence below
    page.get_by_test_id("prev").click()
    page.get_by_test_id("prev").click()
    expect(label).to_have_text("step 4 / 6")
    expect(ir).not_to_contain_text("C_update")  # decompose_reduction not applied yet
    page.get_by_test_id("diff-toggle").check()
    expect(page.get_by_test_id("diff")).to_contain_text("j_0")  # step 4 is the split
    page.get_by_test_id("diff-toggle").uncheck()
    page.get_by_test_id("next").click()
    page.get_by_test_id("next").click()
    expect(ir).to_contain_text("C_update")
    tile = page.get_by_test_id("decision-2")
    tile.fill("8, 8")
    tile.press("Enter")
    expect(page.get_by_test_id("error")).to_contain_text("loop extent is 128")
    tile.fill("8, 16")
    tile.press("Enter")
    expect(page.get_by_test_id("status")).to_contain_text("decision [8, 16]")
    expect(ir).to_contain_text("T.grid(128, 8)")
    page.get_by_test_id("retime").click()
    history = page.get_by_test_id("history")
    expect(history).to_contain_text("#3: [8, 16]", timeout=60_000)
    expect(history).to_contain_text("yes")
    page.get_by_test_id("pick-0").click()
    expect(page.get_by_test_id("status")).to_contain_text("bound to best_mm")
    screenshot(widget, "trace_replay")
