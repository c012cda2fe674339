"""Chapter 7 (computational graph optimisation): the §7.3 module parses through ``%%relax``,
computes x * y + y, and the book's visitor rewrites it to ``ewise_fma``."""

from __future__ import annotations

import numpy as np
from course_support import run_listing, run_relax

RNG = np.random.default_rng(7)


def test_multiply_add_module_written_with_relax_op_computes_x_times_y_plus_y(shell):
    mod = run_listing(shell, "ch7_ewise_multiply_add", "relax")
    x, y = RNG.random((3, 4), dtype="float32"), RNG.random((3, 4), dtype="float32")
    np.testing.assert_allclose(run_relax(mod, x, y), x * y + y, rtol=1e-6)


def test_the_books_ewise_fma_rewriter_runs_on_the_parsed_module(shell):
    import tvm
    from tvm import relax

    mod = run_listing(shell, "ch7_ewise_multiply_add", "relax")
    assert [type(b.value).__name__ for b in mod["main"].body.blocks[0].bindings] == ["Call"] * 2

    @relax.expr_functor.mutator
    class EwiseFMARewriter(relax.PyExprMutator):
        def visit_call_(self, call):
            call = self.visit_expr_post_order(call)
            if call.op != tvm.ir.Op.get("relax.add"):
                return call
            value = self.lookup_binding(call.args[0])
            if not isinstance(value, relax.Call) or value.op != tvm.ir.Op.get("relax.multiply"):
                return call
            fma = tvm.ir.Op.get("relax.ewise_fma")
            return relax.Call(fma, [value.args[0], value.args[1], call.args[1]], None, None)

    updated = relax.analysis.remove_all_unused(EwiseFMARewriter().visit_expr(mod["main"]))
    text = updated.script()
    assert "R.ewise_fma(x, y, y)" in text and "R.multiply" not in text
