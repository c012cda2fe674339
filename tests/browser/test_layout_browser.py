"""What a learner sees in a real JupyterLab (Debian's Chromium), at 1400 px and at a narrow 900 px:
the timing bars of notebook 05, the model tuning display, the ``--pipeline`` pass stepper of
notebook 06, printed TVMScript and a schedule stepper's side-by-side diff.

One notebook runs once; each part is photographed at both widths
(``test-output/layout_<part>_<width>.png``) and checked on the DOM: no label is clipped, no IR
line is split inside a token, both sides of a diff are visible.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from build_support import MM_RELU_STEPS
from lab_support import SPLIT_TOKENS_JS

pytestmark = pytest.mark.browser

TESTS = Path(__file__).resolve().parents[1]
MM_RELU = (TESTS / "course" / "listings" / "ch2_mm_relu.py").read_text()
CREATE_MODEL = (TESTS / "course" / "listings" / "ch7_create_model.py").read_text()

MLP = """import numpy as np
import torch
from torch import nn
import tvm
from tvm import relax


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear0 = nn.Linear(784, 128, bias=True)
        self.relu = nn.ReLU()
        self.linear1 = nn.Linear(128, 10, bias=True)

    def forward(self, x):
        return self.linear1(self.relu(self.linear0(x)))


torch.manual_seed(0)
mlp_model = MLP().eval()
img = torch.rand(1, 784)
rng = np.random.default_rng(0)
mlp_params = {"w0": rng.standard_normal((128, 784), dtype="float32") * 0.05,
              "b0": rng.standard_normal(128, dtype="float32"),
              "w1": rng.standard_normal((10, 128), dtype="float32") * 0.1,
              "b1": rng.standard_normal(10, dtype="float32")}
"""

CELLS = [
    "%load_ext mlc_jupyter",
    MLP,
    '%mlc_import mlp_model --inputs "img" --as mlp_relax',
    "%mlc_time mlp_model mlp_relax --breakdown",
    "%mlc_tune mlp_relax --trials 16 --fresh",
    CREATE_MODEL + "\nMLPModel = create_model()",
    "%mlc_passes MLPModel --pipeline target --as MLPLowered",
    "%%tir --quiet\n" + MM_RELU,
    "MyModule",
    "%%mlc_schedule MyModule\n" + MM_RELU_STEPS,
]
IMPORT, TIMING, TUNING, PIPELINE, IR, SCHEDULE = 2, 3, 4, 6, 8, 9

#: Elements whose text must fit their box: table cells, SVG labels, step names, panel titles.
CLIPPED_JS = """(root) => {
  const clipped = [];
  for (const el of root.querySelectorAll('.mlc-st-item, .mlc-st-h, .mlc-st-source, th, td')) {
    const cut = el.offsetWidth && el.scrollWidth > el.clientWidth + 1;
    // cut with an ellipsis is allowed when the tooltip has the whole text
    const elided = getComputedStyle(el).textOverflow === 'ellipsis'
      && (el.title || '').includes(el.textContent.replace(/^line \\d+: /, '').trim());
    if (cut && !elided) clipped.push(el.textContent);
  }
  for (const svg of root.querySelectorAll('svg')) {
    const box = svg.getBoundingClientRect();
    for (const t of svg.querySelectorAll('text')) {
      const r = t.getBoundingClientRect();
      if (r.width && (r.left < box.left - 1 || r.right > box.right + 1)) clipped.push(t.textContent);
    }
  }
  return clipped;
}"""

#: IR lines drawn on more than one row (a wrap), each with its text.
WRAPPED_JS = """(root) => {
  const wrapped = [];
  for (const line of root.querySelectorAll('[data-line]')) {
    const height = parseFloat(getComputedStyle(line).lineHeight) || 16;
    if (line.textContent.trim() && line.getBoundingClientRect().height > 1.6 * height) {
      wrapped.push(line.textContent);
    }
  }
  return wrapped;
}"""


def _outputs(page):
    return page.locator(".jp-CodeCell .jp-OutputArea")


def _shoot(lab, page, width: int) -> None:
    outputs = _outputs(page)
    for name, index in (("timing", TIMING), ("tuning", TUNING), ("pipeline", PIPELINE),
                        ("schedule_side", SCHEDULE)):  # fmt: skip
        outputs.nth(index).scroll_into_view_if_needed()
        lab.screenshot(f"layout_{name}_{width}", outputs.nth(index))


def _prepare_views(page) -> None:
    """The pass stepper at its last step in the graph view; the schedule stepper side by side."""
    steppers = page.locator(".mlc-st")
    passes, schedule = steppers.nth(0), steppers.nth(1)
    passes.get_by_test_id("view").select_option("graph")
    schedule.get_by_test_id("view").select_option("side")
    schedule.get_by_test_id("step-label").wait_for()


def test_outputs_fit_their_boxes_at_two_widths(lab):
    from playwright.sync_api import expect

    page = lab.open(CELLS, name="layout.ipynb")
    lab.run_all(timeout_ms=900_000)
    outputs = _outputs(page)
    expect(page.locator(".mlc-st")).to_have_count(2, timeout=60_000)
    _prepare_views(page)
    schedule = page.locator(".mlc-st").nth(1)
    expect(schedule.get_by_test_id("diff")).to_be_visible()
    for width in (1400, 900):
        page.set_viewport_size({"width": width, "height": 1000})
        page.wait_for_timeout(500)
        _shoot(lab, page, width)
        for index in (TIMING, TUNING, PIPELINE, SCHEDULE):
            output = outputs.nth(index)
            assert output.evaluate(CLIPPED_JS) == [], f"clipped at {width} px (cell {index})"
        # both sides of the diff are on screen, side by side; a cell too narrow for two
        # readable sides shows the unified diff instead, and says so
        sides = schedule.locator("[data-testid=diff] [data-side]")
        box = schedule.get_by_test_id("ir").bounding_box()
        if schedule.bounding_box()["width"] >= 700:
            for side in ("before", "after"):
                pane = schedule.locator(f"[data-side={side}]").bounding_box()
                assert pane and pane["width"] > 300, f"the {side} side is narrow at {width} px"
                assert (
                    box["x"] - 1 <= pane["x"]
                    and pane["x"] + pane["width"] <= box["x"] + box["width"] + 1
                )
            assert sides.count() == 2
        else:
            assert sides.count() == 0
            expect(schedule.get_by_test_id("view-note")).to_contain_text("unified diff")
            diff = schedule.get_by_test_id("diff").bounding_box()
            assert diff["width"] >= box["width"] - 2  # the whole width, one pane
        for index in (TIMING, TUNING, PIPELINE, SCHEDULE):
            split = outputs.nth(index).evaluate(SPLIT_TOKENS_JS)
            assert split == [], f"text wrapped inside a token at {width} px: {split[:3]}"
        # the graph stays in its own frame, beside or above the panels, never under one
        passes_now = page.locator(".mlc-st").nth(0)
        drawing = passes_now.get_by_test_id("graph-drawing").bounding_box()
        side = passes_now.get_by_test_id("sidebar").bounding_box()
        beside = drawing["x"] + drawing["width"] <= side["x"] + 1
        above = drawing["y"] + drawing["height"] <= side["y"] + 1
        assert beside or above, f"the graph runs under the side panel at {width} px"
        schedule.get_by_test_id("view").select_option("ir")
        assert schedule.evaluate(WRAPPED_JS) == [], f"an IR line wraps at {width} px"
        assert outputs.nth(IR).evaluate(WRAPPED_JS) == [], f"printed IR wraps at {width} px"
        schedule.get_by_test_id("view").select_option("side")
    for index in (TIMING, TUNING, PIPELINE, SCHEDULE):
        expect(outputs.nth(index)).not_to_contain_text("Traceback")
    # the import's library messages are folded below it, not red stderr
    stderr = outputs.nth(IMPORT).locator("[data-mime-type='application/vnd.jupyter.stderr']")
    expect(stderr).to_have_count(0)
    # the late pipeline step's graph: drawn at a readable size, "fit" shrinks it to the pane
    passes = page.locator(".mlc-st").nth(0)
    expect(passes.get_by_test_id("graph-zoom")).to_have_text("100%")
    current = passes.locator(".mlc-st-item.current")
    in_view = current.evaluate(
        "(c) => { const l = c.parentElement; return c.offsetTop >= l.scrollTop"
        " && c.offsetTop + c.offsetHeight <= l.scrollTop + l.clientHeight; }"
    )
    assert in_view  # the list keeps the step on screen in view
    assert current.get_attribute("title") == "18. AttachGlobalSymbol"
    passes.get_by_test_id("zoom-fit").click()
    drawing = passes.get_by_test_id("graph-drawing")
    width = drawing.evaluate("(d) => d.querySelector('svg').getBoundingClientRect().width")
    assert width <= drawing.bounding_box()["width"] + 1
    # the cell's own loop names in the trace panel
    expect(schedule.get_by_test_id("trace")).to_contain_text("loop=k")
    # the tuning curve has its axes
    tuning = outputs.nth(TUNING)
    expect(tuning.locator("svg.mlc-tune-curve").last).to_contain_text("trials measured")
    expect(tuning).to_contain_text("tuning kernel 1 of the 1 this budget reaches")
