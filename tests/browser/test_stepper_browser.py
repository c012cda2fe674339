"""The schedule stepper in a real JupyterLab driven by Debian's Chromium: run, step back and forth.

Leaves ``test-output/schedule_stepper.png`` (the widget at step 3: the split of ``j`` marked).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from build_support import MM_RELU_STEPS

pytestmark = pytest.mark.browser

LISTING = Path(__file__).resolve().parents[1] / "course" / "listings" / "ch2_mm_relu.py"

STEPS = "%%mlc_schedule MyModule\n" + MM_RELU_STEPS


def test_a_user_runs_a_schedule_cell_and_steps_through_the_ir(lab):
    from playwright.sync_api import expect

    page = lab.open(["%load_ext mlc_jupyter", "%%tir --quiet\n" + LISTING.read_text(), STEPS],
                    name="stepper.ipynb")  # fmt: skip
    lab.run_all()
    widget = page.locator(".mlc-st")
    expect(widget).to_be_visible(timeout=60_000)
    label, ir = page.get_by_test_id("step-label"), page.get_by_test_id("ir")
    expect(label).to_have_text("step 7 / 7")
    expect(ir).to_contain_text("Y_init")  # decompose_reduction applied
    for _ in range(4):
        page.get_by_test_id("prev").click()
    expect(label).to_have_text("step 3 / 7")
    expect(page.get_by_test_id("source")).to_contain_text("line 4:")
    expect(ir).to_contain_text("j_0")
    expect(ir).not_to_contain_text("Y_init")
    expect(page.get_by_test_id("trace")).to_contain_text("sch.split")
    assert ir.locator("[data-line][style*='background']").count() > 0  # changed lines marked
    lab.screenshot("schedule_stepper", widget)
    page.get_by_test_id("prev").click()
    page.get_by_test_id("prev").click()
    page.get_by_test_id("prev").click()
    expect(label).to_have_text("step 0 / 7")
    expect(ir).not_to_contain_text("j_0")
    page.get_by_test_id("next").click()
    page.get_by_test_id("view").select_option("unified")
    expect(label).to_have_text("step 1 / 7")
    page.get_by_test_id("slider").fill("3")
    expect(label).to_have_text("step 3 / 7")
    expect(page.get_by_test_id("diff")).to_contain_text("+")


def test_a_user_builds_a_schedule_from_the_menus_undoes_and_exports(lab):
    from playwright.sync_api import expect

    page = lab.open(["%load_ext mlc_jupyter", "%%tir --quiet\n" + LISTING.read_text(),
                     "%mlc_schedule MyModule"], name="interactive.ipynb")  # fmt: skip
    lab.run_all()
    expect(page.locator(".mlc-st")).to_be_visible(timeout=60_000)
    page.get_by_test_id("block").select_option("Y")
    page.get_by_test_id("primitive").select_option("split")
    page.get_by_test_id("loop").select_option(label="j (128)")
    page.get_by_test_id("arg-factors").fill("[None, 8]")
    page.get_by_test_id("apply").click()
    label = page.get_by_test_id("step-label")
    expect(label).to_have_text("step 1 / 1")
    expect(page.get_by_test_id("ir")).to_contain_text("T.grid(128, 16, 8, 128)")
    page.get_by_test_id("primitive").select_option("parallel")
    page.get_by_test_id("loop").select_option(label="k (128)")
    page.get_by_test_id("apply").click()
    expect(page.get_by_test_id("error")).to_contain_text("not a data parallel block iter")
    page.get_by_test_id("undo").click()
    expect(label).to_have_text("step 0 / 0")
    page.get_by_test_id("redo").click()
    expect(label).to_have_text("step 1 / 1")
    page.get_by_test_id("export").click()
    expect(page.get_by_test_id("code")).to_contain_text("sch.split(")
    lab.screenshot("schedule_interactive", page.locator(".mlc-st"))


def test_the_menus_keep_what_the_user_chose_and_typed_while_the_widget_redraws(lab):
    from playwright.sync_api import expect

    page = lab.open(["%load_ext mlc_jupyter", "%%tir --quiet\n" + LISTING.read_text(),
                     "%mlc_schedule MyModule"], name="interactive_keep.ipynb")  # fmt: skip
    lab.run_all()
    expect(page.locator(".mlc-st")).to_be_visible(timeout=60_000)
    page.get_by_test_id("block").select_option("Y")
    page.get_by_test_id("primitive").select_option("split")
    page.get_by_test_id("loop").select_option(label="j (128)")
    page.get_by_test_id("arg-factors").fill("[None, 16]")
    # The kernel changes traits (status, timings) while the form holds unsent choices.
    page.get_by_test_id("time").click()
    expect(page.get_by_test_id("timings")).to_contain_text("#0", timeout=60_000)  # it redrew
    expect(page.get_by_test_id("status")).to_contain_text("step 0: ")
    expect(page.get_by_test_id("block")).to_have_value("Y")
    expect(page.get_by_test_id("primitive")).to_have_value("split")
    expect(page.get_by_test_id("loop")).to_have_value("1")
    expect(page.get_by_test_id("arg-factors")).to_have_value("[None, 16]")
    page.get_by_test_id("apply").click()
    expect(page.get_by_test_id("step-label")).to_have_text("step 1 / 1")
    expect(page.get_by_test_id("ir")).to_contain_text("T.grid(128, 8, 16, 128)")
