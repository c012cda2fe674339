"""Contract of tvm_compat/out_of_bounds.py: the report of TVM's static out-of-bounds checker
that compilation/bounds.py parses; the ops of the guards, the analyzer's constraint scopes and
the proof strength with which compilation/guards.py proves a guarded access inside its buffer.
A failure names what TVM changed."""

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


def test_the_guards_ops_and_the_analyzers_constraint_scopes_are_as_compilation_guards_reads():
    tir = tvm_compat.tir()
    x = tir.Var("x", "int32")
    padded = tir.if_then_else(x < 8, x, 0)
    assert padded.op.name == tvm_compat.IF_THEN_ELSE_OP, (
        f"T.if_then_else's op is {padded.op.name}, not IF_THEN_ELSE_OP: compilation/guards.py "
        "would no longer read its condition as a guard"
    )
    hint = tir.likely(x < 8)
    assert hint.op.name == tvm_compat.LIKELY_OP, (
        f"T.likely's op is {hint.op.name}, not LIKELY_OP: a likely-guarded access is refused"
    )
    assert isinstance(padded, tvm_compat.tir_nodes().Call), "tir_nodes().Call is not the call class"
    ranges = tvm_compat.analyzer()
    ranges.bind(x, tvm_compat.tir_nodes().Range.from_min_extent(0, 16))
    strength = tvm_compat.symbolic_bound_strength()
    assert not ranges.can_prove(x < 8, strength)
    with ranges.constraint_scope(x < 8):
        assert ranges.can_prove(x < 8, strength), (
            "analyzer.constraint_scope(c) no longer makes c provable inside its with-block"
        )
        assert ranges.can_prove(x + 8 < 16, strength)
    assert not ranges.can_prove(x < 8, strength), "a constraint scope outlived its with-block"
