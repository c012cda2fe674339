"""The pass stepper in a real JupyterLab driven by Debian's Chromium: the book's MLP through
LegalizeOps, FuseOps and FuseTIR, stepped with the graph view on.

Leaves ``test-output/pass_stepper_mlp_before_fusion.png`` (the MLP's graph, one node per operator),
``pass_stepper_mlp_after_fuseops.png`` (matmul + add + relu in one box) and
``pass_stepper_mlp_after_fusetir.png`` (one TensorIR call per fused function).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "passes"))
from chapter7 import IMPORTS, listing  # noqa: E402

SETUP = (
    IMPORTS
    + """rng = np.random.default_rng(0)
mlp_params = {"w0": rng.standard_normal((128, 784), dtype="float32") * 0.05,
              "b0": rng.standard_normal(128, dtype="float32"),
              "w1": rng.standard_normal((10, 128), dtype="float32") * 0.1,
              "b1": rng.standard_normal(10, dtype="float32")}
"""
    + listing("ch7_create_model")
)
PASSES = """%%mlc_passes MLPModel --as MLPFused
relax.transform.LegalizeOps()
relax.transform.AnnotateTIROpPattern()
relax.transform.FuseOps()
relax.transform.FuseTIR()
relax.transform.FuseTIR()"""


def test_a_user_steps_the_mlp_through_fusion_and_sees_the_graph_merge(lab):
    from playwright.sync_api import expect

    from mlc_jupyter.graph import dot_available

    page = lab.open(["%load_ext mlc_jupyter", SETUP, PASSES], name="passes.ipynb")
    lab.run_all()
    widget = page.locator(".mlc-st")
    expect(widget).to_be_visible(timeout=60_000)
    label, ir = page.get_by_test_id("step-label"), page.get_by_test_id("ir")
    expect(label).to_have_text("step 5 / 5")
    expect(page.get_by_test_id("unchanged")).to_be_visible()  # the second FuseTIR: no change
    expect(page.get_by_test_id("step-5")).to_have_class("mlc-st-item current unchanged")
    page.get_by_test_id("view").select_option("graph")
    graph = page.get_by_test_id("graph")
    drawing = graph.locator("svg") if dot_available() else graph.locator("pre")
    page.get_by_test_id("step-0").click()  # the book's MLP as written
    expect(label).to_have_text("step 0 / 5")
    expect(drawing).to_contain_text("permute_dims")
    expect(drawing).to_contain_text("nn.relu")
    lab.screenshot("pass_stepper_mlp_before_fusion", widget)
    page.get_by_test_id("step-3").click()  # FuseOps: the operators of each fusion in a box
    expect(page.get_by_test_id("source")).to_contain_text("FuseOps")
    expect(drawing).to_contain_text("fused_matmul_add_relu")
    expect(page.get_by_test_id("functions")).to_contain_text("+ fused_matmul_add_relu")
    expect(page.get_by_test_id("ops")).to_contain_text("call fused_matmul_add_relu (+1)")
    lab.screenshot("pass_stepper_mlp_after_fuseops", widget)
    page.get_by_test_id("next").click()  # FuseTIR: one TensorIR call per fused function
    expect(label).to_have_text("step 4 / 5")
    expect(drawing).to_contain_text("fused_matmul_add_relu")
    expect(drawing).not_to_contain_text("nn.relu")
    expect(page.get_by_test_id("functions")).to_contain_text("- relu")
    lab.screenshot("pass_stepper_mlp_after_fusetir", widget)
    page.get_by_test_id("view").select_option("unified")
    expect(page.get_by_test_id("diff")).to_contain_text("+")
    page.get_by_test_id("tir-function").select_option("fused_matmul_add_relu")
    page.get_by_test_id("schedule").click()  # bind step 4, give the %%mlc_schedule cell for it
    expect(page.get_by_test_id("code")).to_contain_text(
        "%%mlc_schedule MLPModel_step4 --func fused_matmul_add_relu"
    )
    expect(page.get_by_test_id("status")).to_contain_text("bound MLPModel_step4")
