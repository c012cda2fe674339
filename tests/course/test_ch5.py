"""Chapter 5 (framework integration): the BlockBuilder module, as the course printed it, parses
through ``%%relax`` and computes relu(A @ B); the book's own pre-2023 listing is refused clearly."""

from __future__ import annotations

import numpy as np
from course_support import gone_listing_error, run_listing, run_relax

RNG = np.random.default_rng(5)
A = RNG.random((128, 128), dtype="float32")
B = RNG.random((128, 128), dtype="float32") - 0.5


def _chapter_5_blockbuilder_module():
    """The book's §5.3 code: te_matmul and te_relu emitted into ``main`` with a BlockBuilder."""
    from tvm import relax, te

    def te_matmul(a, b):
        k = te.reduce_axis((0, a.shape[1]), name="k")
        return te.compute(
            (a.shape[0], b.shape[1]), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), "matmul"
        )

    def te_relu(a):
        return te.compute(a.shape, lambda *i: te.max(a(*i), 0), name="relu")

    a = relax.Var("A", relax.TensorType((128, 128), "float32"))
    b = relax.Var("B", relax.TensorType((128, 128), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main"):
        with bb.dataflow():
            c = bb.emit_te(te_matmul, a, b)
            d = bb.emit_te(te_relu, c)
            r = bb.emit_output(d)
        bb.emit_func_output(r, params=[a, b])
    return bb.get()


def test_blockbuilder_module_as_the_course_printed_it_computes_relu_of_matmul(shell):
    mod = run_listing(shell, "ch5_blockbuilder_module_printed", "relax")
    assert shell.user_ns["Module"] is mod
    assert bool(mod["te_matmul"].attrs["tirx.noalias"])
    np.testing.assert_allclose(run_relax(mod, A, B), np.maximum(A @ B, 0), rtol=1e-4, atol=1e-4)


def test_what_tvm_027_prints_for_the_blockbuilder_module_parses_back_and_computes(shell):
    built = _chapter_5_blockbuilder_module()
    value = shell.run_cell_magic("relax", "--quiet", built.script())
    assert value is None
    mod = shell.user_ns["_"]
    np.testing.assert_allclose(run_relax(mod, A, B), np.maximum(A @ B, 0), rtol=1e-4, atol=1e-4)


def test_pre_2023_listing_of_section_5_3_3_is_refused_at_its_first_old_annotation(shell):
    err = gone_listing_error(shell, "ch5_blockbuilder_module_pre2023", "relax")
    assert "Tensor" in err.message
    assert err.source_line.lstrip().startswith("def main(A: Tensor(")
