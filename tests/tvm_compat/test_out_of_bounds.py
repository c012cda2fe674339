"""Contract of tvm_compat/out_of_bounds.py: the report of TVM's static out-of-bounds checker
that compilation/bounds.py parses, and the analyzer's constraint scopes that prove a guarded
access inside its buffer. A failure names what TVM changed."""

from __future__ import annotations

import re

from mlc_jupyter import tvm_compat


def _shifted(offset: int, n: int = 8):
    """``B[i] = A[i + offset]`` over ``n`` elements (out of bounds for any offset > 0)."""
    te = tvm_compat.tvm().te
    a = te.placeholder((n,), name="A")
    b = te.compute((n,), lambda i: a[i + offset], name="B")
    return te.create_prim_func([a, b])


def test_the_static_out_of_bounds_report_reads_as_compilation_bounds_expects():
    ok = tvm_compat.tvm().IRModule({"main": _shifted(0)})
    assert tvm_compat.check_out_of_bounds(ok) == ""
    report = tvm_compat.check_out_of_bounds(tvm_compat.tvm().IRModule({"main": _shifted(1)}))
    pattern = (
        r"Out of bounds memory access on buffer \S+ dimension \d+\. index .+? with bounds "
        r"\[.+, .+?\] is outside the range \[0, .+?\]\."
    )
    assert re.search(pattern, report), (
        "TVM's OOBChecker report changed; compilation/bounds.py (_FINDING) parses it:\n" + report
    )


def test_an_access_a_block_predicate_guards_is_proved_inside():
    sch = tvm_compat.Schedule(_shifted(0, n=10))
    (loop,) = sch.get_loops(tvm_compat.get_block(sch, "B"))
    sch.split(loop, factors=[None, 4])  # 4 does not divide 10: a T.where guards the tail
    found = tvm_compat.guarded_in_bounds(sch.mod["main"], {"A", "B"})
    assert found and all(all(inside) for _, _, inside in found), (
        "an access under a block predicate is no longer proved inside its buffer (the analyzer's "
        f"constraint_scope / can_prove changed): {[(str(b.name), inside) for b, _, inside in found]}"
    )
