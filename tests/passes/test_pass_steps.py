"""``%%mlc_passes``: the book's chapter 7 rewrites run step by step in a real IPython shell."""

from __future__ import annotations

import numpy as np
import pytest
from chapter7 import MULTIPLY_ADD, listing, load_chapter, mlp_params, numpy_mlp, run_mlp

from mlc_jupyter import tvm_compat
from mlc_jupyter.dialect import translate
from mlc_jupyter.errors import PassStepError
from mlc_jupyter.passes import export_passes, run_pass_cell, run_pipeline

X = np.random.default_rng(7).random((1, 784), dtype="float32")
BUILTIN_FUSION = """relax.transform.LegalizeOps()
relax.transform.AnnotateTIROpPattern()
relax.transform.FuseOps()
relax.transform.FuseTIR()"""


@pytest.fixture
def chapter(shell):
    return load_chapter(shell)


def test_the_books_fusion_and_lowering_step_through_to_the_books_final_module(shell, chapter):
    book = {**chapter}
    cell = listing("ch7_matmul_add_fusor") + listing("ch7_lower_to_tensorir")
    exec(translate(cell).source, book)  # noqa: S102 - the book's plain Python, in TVM 0.27's names
    shell.run_cell_magic("mlc_passes", "MLPModel --as MLPDone", cell)
    ns = shell.user_ns
    tvm_compat.assert_structural_equal(ns["MLPDone"], book["MLPModelFinal"])
    assert {"MLPFused", "MLPModelTIR", "MatmulAddFusor", "op_map"} <= set(ns)  # the cell's names
    np.testing.assert_allclose(run_mlp(ns["MLPDone"], X), numpy_mlp(X, mlp_params()), rtol=1e-4)
    run = run_pass_cell(cell, chapter["MLPModel"], namespace=chapter, first_line=2)
    assert [s.name for s in run.steps] == ["MLPFused", "MLPModelTIR", "MLPModelFinal"]
    fused, lowered, final = run.steps
    assert fused.appeared == ("fused_matmul_add0", "fused_matmul_add1")
    assert fused.op_counts["call fused_matmul_add0"] == 1 and fused.op_counts["matmul"] == 2
    assert "relu" in lowered.appeared and lowered.op_counts["call_tir"] == 7
    assert final.vanished == ("add", "add1", "matmul", "matmul1")  # merged into the fused ones
    assert fused.line == cell.splitlines().index("MLPFused = FuseDenseAddPass()(MLPModel)") + 2


def test_each_statement_that_applies_a_pass_is_one_step_and_a_no_op_says_so(chapter):
    code = BUILTIN_FUSION + "\nrelax.transform.FuseTIR()\nprint('no pass here')"
    run = run_pass_cell(code, chapter["MLPModel"], namespace=chapter)
    names = [(s.name, s.line, s.changed) for s in run.steps]
    assert names == [("LegalizeOps", 2, True), ("AnnotateTIROpPattern", 3, True),
                     ("FuseOps", 4, True), ("FuseTIR", 5, True), ("FuseTIR", 6, False)]  # fmt: skip
    assert "fused_matmul_add_relu" in run.steps[2].appeared  # FuseOps: a Relax function
    assert "relu" in run.steps[3].vanished  # FuseTIR: merged into one TensorIR function
    assert run.initial_op_counts == {"add": 2, "matmul": 2, "nn.relu": 1, "permute_dims": 2}


def test_a_mutator_instance_rewrites_every_relax_function_and_the_input_is_untouched(shell):
    assert shell.run_cell("import tvm\nfrom tvm import relax").success
    shell.run_cell_magic("relax", "--quiet", MULTIPLY_ADD)
    code = listing("ch7_ewise_fma_rewriter") + "\nEwiseFMARewriter()\n"
    code += "relax.analysis.remove_all_unused(mod['main'])"
    before = shell.user_ns["MyModule"].script()
    shell.run_cell_magic("mlc_passes", "MyModule", code)
    after = shell.user_ns["MyModule_passes"]
    assert "R.ewise_fma(x, y, y)" in after.script() and "R.multiply" not in after.script()
    assert shell.user_ns["MyModule"].script() == before


def test_a_failing_rewrite_is_reported_at_its_line_with_tvms_reason_and_binds_nothing(shell):
    assert shell.run_cell("import tvm\nfrom tvm import relax").success
    shell.run_cell_magic("relax", "--quiet", MULTIPLY_ADD)
    code = """relax.transform.LegalizeOps()
@relax.expr_functor.mutator
class Broken(relax.PyExprMutator):
    def visit_call_(self, call):
        call = self.visit_expr_post_order(call)
        return relax.Call(tvm.ir.Op.get("relax.ewise_fma"), [call.args[0]], None, None)
Broken()"""
    with pytest.raises(PassStepError) as caught:
        shell.run_cell_magic("mlc_passes", "MyModule --as out", code)
    err = caught.value
    assert err.line == 8 and err.source_line == "Broken()"
    assert "relax.ewise_fma expects 3 arguments, but was called with 1" in str(err)
    assert "ir.Op(" not in str(err)  # TVM's operator dump shortened to its name
    assert "out" not in shell.user_ns and "Broken" not in shell.user_ns
    run = run_pass_cell(code, shell.user_ns["MyModule"], namespace=shell.user_ns)
    assert [s.name for s in run.steps] == ["LegalizeOps"] and run.mod is None  # kept, viewable


def test_a_syntax_error_and_a_python_error_are_located_too(chapter):
    run = run_pass_cell("relax.transform.FuseTIR()\nrelax.transform.FuseOps(", chapter["MLPModel"])
    assert run.error.line == 3 and "syntax error" in str(run.error)
    run = run_pass_cell("relax.transform.NoSuchPass()", chapter["MLPModel"], namespace=chapter)
    assert run.error.line == 2 and "has no attribute 'NoSuchPass'" in str(run.error)
    code = listing("ch7_ewise_fma_rewriter").replace(
        "if call.op != add_op", "if call.opz != add_op"
    )
    code += "\nEwiseFMARewriter()"
    run = run_pass_cell(code, chapter["MLPModel"], namespace=chapter)
    typo = code.splitlines().index("        if call.opz != add_op:") + 2
    assert run.error.line == code.splitlines().index("EwiseFMARewriter()") + 2  # where it ran
    assert str(run.error).endswith(f"has no attribute 'opz' (in visit_call_, line {typo})")


def test_a_pipeline_is_observed_pass_by_pass_and_exports_as_code(chapter):
    run = run_pipeline(chapter["MLPModel"], "target")
    names = [s.name for s in run.steps]
    assert names[:7] == ["DispatchSampling", "DispatchSortScan", "LegalizeOps",
                         "AnnotateTIROpPattern", "FoldConstant", "FuseOps", "FuseTIR"]  # fmt: skip
    assert not run.steps[0].changed and run.steps[2].changed
    assert "FuseTIRInner" not in names  # TVM's sub-passes stay inside the pass that ran them
    code = export_passes(run)
    assert "relax.transform.FuseOps()" in code.splitlines()
    replay = run_pass_cell("\n".join(code.splitlines()[2:7]), chapter["MLPModel"])
    assert replay.ok and "fused_matmul_add_relu" in {
        gv.name_hint for gv in replay.mod.get_global_vars()
    }


def test_the_pipeline_magic_binds_the_result_and_rejects_unknown_names(shell, chapter):
    from IPython.core.error import UsageError

    shell.run_line_magic("mlc_passes", "MLPModel --pipeline default --static")
    assert "vm.builtin" in shell.user_ns["MLPModel_passes"].script()  # lowered for the VM
    with pytest.raises(UsageError, match="unknown pipeline 'fast'; known: default"):
        shell.run_line_magic("mlc_passes", "MLPModel --pipeline fast")
    with pytest.raises(UsageError, match="not an IRModule"):
        shell.run_line_magic("mlc_passes", "mlp_params --pipeline default")
