"""Contract of tvm_compat/build.py: ``tvm.compile`` with a registered TIR pipeline, the run-time
bound checks and the message they raise, the PassContext option that keeps loops scalar,
LLVM's view of this CPU, and a Relax module's kernels compiled and exported in parallel parts
(``relax.build``'s steps, some of them private). A failure names what TVM changed."""

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


def _relax_model(kernels: int):
    """A Relax function of ``kernels`` elementwise kernels in a row (``relu(x * 2 + k)`` ...)."""
    from tvm import relax

    te = tvm_compat.tvm().te
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((4, 16), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            y = x
            for k in range(kernels):
                y = bb.emit_te(lambda t, k=k: te.compute(t.shape, lambda i, j: t[i, j] * 2 + k), y)
            out = bb.emit_output(y)
        bb.emit_func_output(out)
    return bb.get()


def test_a_relax_module_s_kernels_compiled_in_parts_give_tvm_s_results_and_export(tmp_path):
    tvm = tvm_compat.tvm()
    mod = _relax_model(5)
    target = tvm.target.Target({"kind": "llvm"})
    x = np.arange(64, dtype="float32").reshape(4, 16)
    expected = x.copy()
    for k in range(5):
        expected = expected * 2 + k
    # three parts of five kernels, each lowered and compiled in a thread of its own
    executable = tvm_compat.build._compile_relax_in_parts(mod, target, None, 3)
    vm = tvm.relax.VirtualMachine(executable, tvm.cpu())
    np.testing.assert_allclose(vm["main"](tvm.runtime.tensor(x)).numpy(), expected)
    # its objects, written in parallel, link into a library that loads and runs the same
    objects = tvm_compat.export_objects(executable, str(tmp_path))
    assert objects is not None and len(objects) >= 3  # a part's module each, the bytecode
    tvm_compat.link_shared(str(tmp_path / "lib.so"), objects)
    loaded = tvm_compat.load_executable(str(tmp_path / "lib.so"), relax=True)
    vm = tvm.relax.VirtualMachine(loaded, tvm.cpu())
    np.testing.assert_allclose(vm["main"](tvm.runtime.tensor(x)).numpy(), expected)


def test_compile_splits_a_relax_module_s_kernels_only():
    assert tvm_compat.build.relax_kernel_count(_relax_model(3)) == 3
    assert tvm_compat.build.relax_kernel_count(_shifted(0)) == 0  # a TIR module: as TVM builds it
