"""The pass stepper widget's state (no browser), its static fallback, and the round trip through
the schedule stepper: open a fused TensorIR function, schedule it, put it back, build and time."""

from __future__ import annotations

import numpy as np
import pytest
from chapter7 import load_chapter, mlp_params, numpy_mlp, run_mlp

from mlc_jupyter import tvm_compat
from mlc_jupyter.graph import dot_available
from mlc_jupyter.passes import replace_function, run_pass_cell
from mlc_jupyter.schedule import last_export

FUSION = """relax.transform.LegalizeOps()
relax.transform.AnnotateTIROpPattern()
relax.transform.FuseOps()
relax.transform.FuseTIR()
relax.transform.FuseTIR()"""
SCHEDULE = """block = sch.get_block("matmul")
i, j, k = sch.get_loops(block)
j0, j1 = sch.split(j, factors=[None, 16])
sch.reorder(j0, k, j1)
sch.vectorize(j1)"""
X = np.random.default_rng(3).random((1, 784), dtype="float32")


@pytest.fixture
def chapter(shell):
    return load_chapter(shell)


@pytest.fixture
def stepper(chapter):
    from mlc_jupyter.widgets.pass_stepper import PassStepper

    run = run_pass_cell(FUSION, chapter["MLPModel"], namespace=chapter)
    return PassStepper(run, namespace=chapter, base="MLPModel")


def test_each_step_carries_ir_diff_functions_operators_and_folds_a_no_op(stepper):
    assert len(stepper.steps) == 6 and stepper.index == 5
    assert [s["name"] for s in stepper.steps][1:] == [
        "LegalizeOps", "AnnotateTIROpPattern", "FuseOps", "FuseTIR", "FuseTIR"]  # fmt: skip
    stepper.index = 3  # the IR and diffs of the step on screen
    fuse_ops = {**stepper.steps[3], **stepper.current}
    assert fuse_ops["functions"].startswith("+ fused_matmul1_add1\n+ fused_matmul_add_relu")
    assert "call fused_matmul_add_relu (+1)" in fuse_ops["ops"]
    assert fuse_ops["changed"] and "fused_matmul_add_relu" in fuse_ops["unified"]
    stepper.index = 5
    assert stepper.steps[5]["unchanged"] and stepper.current["unified"] == ""
    assert "fused_matmul_add_relu" in stepper.steps[4]["tir"]
    assert ["graph", "graph"] in stepper.views and stepper.show_list


def test_the_graph_follows_the_step_so_a_fusion_shows_as_nodes_merging(stepper):
    stepper.index = 1  # after LegalizeOps: one node per operator
    assert "fused" not in stepper.graph_text and "matmul(" in stepper.graph_text
    stepper.index = 3  # after FuseOps: the operators inside a box per fused function
    assert "[fused_matmul_add_relu] matmul(" in stepper.graph_text
    stepper.graph_fused = "collapse"
    assert "fused_matmul_add_relu(x, transpose" in stepper.graph_text
    stepper.index = 4  # after FuseTIR: one TensorIR call
    assert "fused_matmul_add_relu(x, transpose" in stepper.graph_text
    if dot_available():
        assert stepper.graph_svg.startswith("<svg") and "fused_matmul_add_relu" in stepper.graph_svg


def test_the_saved_notebook_gets_the_steps_and_the_graphs_before_and_after(stepper):
    data, _meta = stepper._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in data
    assert "5. line 6: FuseTIR: no change" in data["text/plain"]
    assert "FuseOps: +fused_matmul1_add1 +fused_matmul_add_relu" in data["text/plain"]
    html = data["text/html"]
    assert "<b>before</b>" in html and "<b>after</b>" in html
    assert ("<svg" in html) == dot_available()


def test_a_fused_function_is_scheduled_in_place_put_back_built_and_timed(shell, stepper):
    from mlc_jupyter.measure import time_module

    code = stepper.schedule_cell("fused_matmul_add_relu", index=4)
    assert (
        code
        == "%%mlc_schedule MLPModel_step4 --func fused_matmul_add_relu --as MLPModel_step4_sch\n"
    )
    assert last_export() == code and "MLPModel_step4" in shell.user_ns
    shell.run_cell_magic("mlc_schedule", code.split(" ", 1)[1].strip(), SCHEDULE)
    sch = shell.user_ns["MLPModel_step4_sch"]
    fused = shell.user_ns["MLPModel_step4"]
    # the book's way: the scheduled function replaces the module's (the rest is untouched)
    scheduled = replace_function(fused, "fused_matmul_add_relu", sch)
    assert "T.vectorized(T.int64(16))" in scheduled["fused_matmul_add_relu"].script()
    assert tvm_compat.structural_equal(scheduled["main"], fused["main"])
    assert "T.vectorized" not in fused["fused_matmul_add_relu"].script()  # input untouched
    # ... or as a step of the pass stepper
    run = run_pass_cell("MLPModel_step4_sch", fused, namespace=shell.user_ns)
    tvm_compat.assert_structural_equal(run.mod, scheduled)
    np.testing.assert_allclose(run_mlp(scheduled, X), numpy_mlp(X, mlp_params()), rtol=1e-4)
    timing = time_module(scheduled)
    assert timing.median_s and timing.median_s > 0 and timing.error is None


def test_putting_back_a_function_the_module_lacks_says_which_it_has(chapter):
    with pytest.raises(ValueError, match="no function 'nope'; it has: main"):
        replace_function(chapter["MLPModel"], "nope", chapter["MLPModel"]["main"])


def test_a_failed_run_keeps_its_earlier_steps_viewable_with_the_reason(chapter):
    from mlc_jupyter.widgets.pass_stepper import PassStepper

    run = run_pass_cell(FUSION + "\nrelax.transform.NoSuchPass()", chapter["MLPModel"])
    widget = PassStepper(run)
    assert len(widget.steps) == 6 and widget.error_line == 7
    assert "has no attribute 'NoSuchPass'" in widget.error
    widget.index = 3
    assert "fused_matmul_add_relu" in widget.graph_text
