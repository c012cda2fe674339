"""A Relax function returning a dataflow variable (the book's FX translator) builds with fusion."""

from __future__ import annotations

import numpy as np
import pytest

tvm = pytest.importorskip("tvm")

from mlc_jupyter.compilation import build_module  # noqa: E402
from mlc_jupyter.compilation.dataflow_outputs import return_outputs  # noqa: E402

RNG = np.random.default_rng(3)
W = RNG.random((16, 8), dtype="float32")


def _leaking(emit_output: bool, pair: bool = False):
    """``relu(x @ W.T)`` whose function returns the block's dataflow variable (as a pair too)."""
    relax = tvm.relax
    x = relax.Var("x", relax.TensorType((2, 8), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main"):
        with bb.dataflow():
            lin = bb.emit(relax.op.linear(x, relax.const(W)))
            out = bb.emit(relax.op.nn.relu(lin))
            if emit_output:
                bb.emit_output(out)
            else:
                bb.emit_output(lin)
        bb.emit_func_output(relax.Tuple([out, out]) if pair else out, [x])
    return bb.get()


@pytest.mark.parametrize(("emit_output", "pair"), [(True, False), (False, False), (True, True)])
def test_a_function_returning_a_dataflow_variable_builds_and_computes(emit_output, pair):
    mod = _leaking(emit_output, pair)
    fixed = return_outputs(mod)
    tvm.relax.analysis.well_formed(fixed)  # returns through an output now
    x = RNG.random((2, 8), dtype="float32")
    built = build_module(mod, "llvm", persist=False)
    vm = tvm.relax.VirtualMachine(built.executable, tvm.cpu())
    result = vm["main"](tvm.runtime.tensor(x))
    outs = [result[0], result[1]] if pair else [result]
    for out in outs:
        np.testing.assert_allclose(out.numpy(), np.maximum(x @ W.T, 0), rtol=1e-5)


def test_a_well_formed_module_is_returned_unchanged():
    relax = tvm.relax
    x = relax.Var("x", relax.TensorType((2, 8), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main"):
        with bb.dataflow():
            gv = bb.emit_output(bb.emit(relax.op.nn.relu(x)))
        bb.emit_func_output(gv, [x])
    mod = bb.get()
    assert return_outputs(mod) is mod
