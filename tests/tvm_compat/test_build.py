"""Contract of tvm_compat/build.py: ``tvm.compile`` with a registered TIR pipeline, the run-time
bound checks and the message they raise, the PassContext option that keeps loops scalar, and
LLVM's view of this CPU. A failure names what TVM changed."""

from __future__ import annotations

import numpy as np
import pytest

from mlc_jupyter import tvm_compat


def _shifted(offset: int):
    te = tvm_compat.tvm().te
    a = te.placeholder((8,), name="A")
    b = te.compute((8,), lambda i: a[i + offset], name="B")
    func = te.create_prim_func([a, b]).with_attr("global_symbol", "main")
    return tvm_compat.tvm().IRModule({"main": func})


def _loaded_buffer(body):
    """The buffer the kernel loads from, found by reflection (as compilation/tir_walk.py does)."""
    stack = [body]
    while stack:
        node = stack.pop()
        if tvm_compat.is_ir_array(node):
            stack.extend(node)
        elif tvm_compat.is_ir_node(node):
            access = tvm_compat.buffer_access(node)
            if access is not None and not access[2]:
                return access[0]
            stack.extend(child for name, child in tvm_compat.node_fields(node) if name != "span")
    raise AssertionError("no buffer load found by reflection (tensorir.buffer_access)")


def test_a_registered_pipeline_with_bound_checks_stops_an_out_of_bounds_read():
    tvm = tvm_compat.tvm()

    def announce_a(mod, _ctx):  # the announcement compilation/checked.py makes for every buffer
        out = {}
        for gvar, func in mod.functions_items():
            a = _loaded_buffer(func.body)
            shape = tvm_compat.tir().op.tvm_tuple(*a.shape)
            out[gvar] = func.with_body(
                tvm_compat.tir().AttrStmt(a, "buffer_bound", shape, func.body)
            )
        return tvm.IRModule(out, attrs=mod.attrs)

    announce = tvm.transform.module_pass(announce_a, opt_level=0, name="test.AnnounceA")
    tvm_compat.register_tir_pipeline(
        "test_contract_checked", lambda: [announce, tvm_compat.instrument_bound_checkers()]
    )
    with tvm.transform.PassContext(config={tvm_compat.DISABLE_VECTORIZE_OPTION: True}):
        built = tvm_compat.compile(_shifted(1), "llvm", tir_pipeline="test_contract_checked")
    a = tvm_compat.tensor(np.arange(8, dtype="float32"))
    with pytest.raises(Exception, match=tvm_compat.BOUND_CHECK_MESSAGE):
        built["main"](a, tvm_compat.empty((8,)))
    plain = tvm_compat.compile(_shifted(0), "llvm")
    b = tvm_compat.empty((8,))
    plain["main"](a, b)
    np.testing.assert_array_equal(b.numpy(), np.arange(8, dtype="float32"))


def test_llvm_knows_this_cpu():
    cpu = tvm_compat.host_cpu()
    assert cpu and cpu not in ("native", "generic"), f"LLVM names this CPU {cpu!r}"
    target = tvm_compat.tvm().target.Target({"kind": "llvm", "mcpu": cpu})
    assert tvm_compat.vector_bits(target) >= 128
    assert "-" in tvm_compat.llvm_system_triple()


@pytest.mark.parametrize(
    ("cpu", "bits"), [("znver3", 256), ("haswell", 256), ("znver4", 512), ("x86-64", 128)]
)
def test_the_vector_width_is_the_cpus_own(cpu, bits):
    # TVM 0.27's llvm_get_vector_width says 512 for every x86 CPU, AVX2-only ones included
    target = tvm_compat.tvm().target.Target({"kind": "llvm", "mcpu": cpu})
    assert tvm_compat.vector_bits(target) == bits
