"""Contract of tvm_compat/lowering.py: ``tvm.compile`` with a registered TIR pipeline, the
run-time bound checks and the message they raise, the PassContext option that keeps loops
scalar, and the allocation annotation that keeps a register tile off the heap. A failure names
what TVM changed."""

from __future__ import annotations

import numpy as np
import pytest
from build_support import through_local_buffer

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


def _workspace_calls(executable) -> int:
    return executable.mod.inspect_source("ll").count("TVMBackendAllocWorkspace")


def test_the_register_tiles_pipeline_keeps_a_small_local_buffer_off_the_heap():
    # 448 floats (1792 bytes, a 28-accumulator tile on AVX-512): TVM gives a local buffer a
    # workspace; the project's pipeline keeps it a stack allocation, with the same results
    pipeline = tvm_compat.register_tiles_pipeline()
    x = np.arange(448, dtype="float32")
    for tir_pipeline, calls in ((None, 1), (pipeline, 0)):
        built = tvm_compat.compile(through_local_buffer(448), "llvm", tir_pipeline)
        assert (_workspace_calls(built) > 0) == bool(calls), tir_pipeline
        out = tvm_compat.empty((448,))
        built["main"](tvm_compat.tensor(x), out)
        np.testing.assert_array_equal(out.numpy(), x * 2 + 1)
    # a buffer larger than STACK_LOCAL_BYTES keeps its workspace (a thread's stack is finite)
    large = tvm_compat.lowering.STACK_LOCAL_BYTES // 4 + 1
    assert _workspace_calls(tvm_compat.compile(through_local_buffer(large), "llvm", pipeline))


def test_the_register_tiles_pipeline_lowers_without_tvms_cse_and_computes_the_same():
    # TVM 0.27's option for it; a renamed option fails every build loudly (PassContext refuses it)
    configs = tvm_compat.tvm().transform.PassContext.list_configs()
    assert tvm_compat.lowering._DISABLE_TIR_CSE_OPTION in configs, "TVM renamed disable_cse_tir"
    te = tvm_compat.tvm().te
    a = te.placeholder((64, 64), name="A")
    row = lambda i, j: (i * 7 + j) % 64  # noqa: E731 - a subexpression both loads share
    b = te.compute((64, 64), lambda i, j: a[row(i, j), j] + a[row(i, j), (j + 1) % 64], name="B")
    func = te.create_prim_func([a, b]).with_attr("global_symbol", "main")
    built = tvm_compat.compile(func, "llvm", tvm_compat.register_tiles_pipeline())
    x = np.arange(64 * 64, dtype="float32").reshape(64, 64)
    out = tvm_compat.empty((64, 64))
    built["main"](tvm_compat.tensor(x), out)
    i, j = np.indices((64, 64))
    np.testing.assert_array_equal(
        out.numpy(), x[(i * 7 + j) % 64, j] + x[(i * 7 + j) % 64, (j + 1) % 64]
    )
