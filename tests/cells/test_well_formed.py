"""A module TVM finds not well-formed is refused with TVM's reason, not only "not well-formed"."""

from __future__ import annotations

import pytest

from mlc_jupyter.errors import TVMScriptError

LOOP_VAR_IN_BLOCK = """
@T.prim_func
def f(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
    for i in range(4):
        with T.block("b"):
            vi = T.axis.spatial(4, i)
            B[i] = A[vi]
"""

CALL_TIR_WRONG_OUTPUT = """
@I.ir_module
class M:
    @T.prim_func
    def copy(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("b"):
                vi = T.axis.spatial(4, i)
                B[vi] = A[vi]

    @R.function
    def main(x: R.Tensor((4,), "float32")):
        cls = M
        with R.dataflow():
            lv = R.call_tir(cls.copy, (x,), out_sinfo=R.Tensor((5,), "float32"))
            R.output(lv)
        return lv
"""


def test_a_loop_variable_used_inside_a_block_is_refused_with_tvms_reason(shell):
    with pytest.raises(TVMScriptError) as info:
        shell.run_cell_magic("tir", "", LOOP_VAR_IN_BLOCK)
    message = str(info.value)
    assert message.startswith("line 3, column 1: the module is not well-formed: ")
    assert "Loop iterator var i is defined outside of any block" in message
    assert 'block "b"' in message
    assert "f" not in shell.user_ns


def test_a_call_tir_whose_output_disagrees_with_the_primfunc_names_both_shapes(shell):
    with pytest.raises(TVMScriptError) as info:
        shell.run_cell_magic("relax", "", CALL_TIR_WRONG_OUTPUT)
    message = str(info.value)
    assert "the module is not well-formed: The `out_ty` argument for R.call_tir" in message
    assert 'R.Tensor((4,), dtype="float32")' in message
    assert 'R.Tensor((5,), dtype="float32")' in message
    assert "M" not in shell.user_ns
