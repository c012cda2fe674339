"""What a user gives, made into tuning tasks: scalar parameters bound to the values to tune for."""

from __future__ import annotations

import pytest
from build_support import SCALE_BY_N

from mlc_jupyter import parse_relax, parse_tir
from mlc_jupyter.errors import TuneError
from mlc_jupyter.tune import tune
from mlc_jupyter.tune.tasks import bind_scalars

AXPY = """
@T.prim_func
def axpy(A: T.Buffer((16, 16), "float32"), B: T.Buffer((16, 16), "float32"),
         C: T.Buffer((16, 16), "float32"), alpha: T.float32):
    for i, j in T.grid(16, 16):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = alpha * A[vi, vj] + B[vi, vj]
"""

#: A model whose kernel takes a scalar from the model's own parameter.
SCALED_MODEL = """
@I.ir_module
class Scaled:
    @T.prim_func
    def scale(A: T.Buffer((16,), "float32"), s: T.float32, B: T.Buffer((16,), "float32")):
        for i in range(16):
            with T.block("B"):
                vi = T.axis.spatial(16, i)
                B[vi] = A[vi] * s

    @R.function
    def main(x: R.Tensor((16,), "float32"), s: R.Prim("float32")):
        cls = Scaled
        with R.dataflow():
            y = R.call_tir(cls.scale, (x, s), out_sinfo=R.Tensor((16,), "float32"))
            R.output(y)
        return y
"""


def test_a_bound_scalar_is_written_in_and_leaves_the_signature_with_a_note():
    bound, notes = bind_scalars(parse_tir(AXPY), {"alpha": 2})
    assert [str(p.name) for p in bound.params] == ["A", "B", "C"]
    assert "T.float32(2.0)" in bound.script()  # an int for a float32 parameter becomes 2.0
    assert notes == (
        "tuned for alpha = 2.0; the tuned kernel has this value written in and no longer takes "
        "alpha",
    )


def test_bind_naming_no_scalar_parameter_lists_the_ones_there_are():
    with pytest.raises(TuneError) as caught:
        bind_scalars(parse_tir(AXPY), {"beta": 1.0})
    assert str(caught.value) == (
        "bind names 'beta', which no kernel here takes as a scalar parameter"
    )
    assert caught.value.hint == "its scalar parameters: alpha"


def test_a_bound_value_of_the_wrong_kind_is_refused_naming_the_parameter():
    with pytest.raises(TuneError) as caught:
        bind_scalars(parse_tir(SCALE_BY_N), {"n": 2.5})
    assert str(caught.value) == (
        "bind: scale: argument 'n' is 2.5, expected n: int32 (a whole number)"
    )


def test_bind_on_a_whole_model_is_refused_saying_what_to_do():
    with pytest.raises(TuneError) as caught:
        tune(parse_relax(SCALED_MODEL), "llvm", trials=8, bind={"s": 2.0})
    assert str(caught.value).startswith("bind fixes a kernel's scalar parameters: a model's")
    assert "tune(model['kernel'], bind={...})" in caught.value.hint
