"""Contract of tvm_compat/build.py: LLVM's view of this CPU, and a Relax module's kernels compiled
and exported in parallel parts (``relax.build``'s steps, some of them private). A failure names
what TVM changed."""

from __future__ import annotations

import numpy as np
import pytest
from build_support import through_local_buffer

from mlc_jupyter import tvm_compat


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
    assert (
        tvm_compat.build.relax_kernel_count(through_local_buffer(8)) == 0
    )  # a TIR module: as TVM builds it


def test_a_tvm_without_relax_build_s_private_steps_builds_on_one_core(monkeypatch):
    # the compile in parts links with private steps of relax.build, which a later TVM may rename
    tvm = tvm_compat.tvm()
    x = tvm.runtime.tensor(np.arange(64, dtype="float32").reshape(4, 16))
    target = tvm.target.Target({"kind": "llvm"})
    in_parts = tvm_compat.compile(_relax_model(3), target, parts=3)
    assert len(in_parts.mod.imports) == 3  # a module per part
    monkeypatch.setattr(tvm_compat.build, "_RELAX_BUILD_STEPS", ("_vmcodegen_of_a_later_tvm",))
    whole = tvm_compat.compile(_relax_model(3), target, parts=3)
    assert len(whole.mod.imports) == 1  # as tvm.compile builds it
    outputs = [tvm.relax.VirtualMachine(e, tvm.cpu())["main"](x).numpy() for e in (in_parts, whole)]
    np.testing.assert_array_equal(*outputs)


def test_a_tvm_without_the_private_export_calls_leaves_the_export_to_export_library(
    monkeypatch, tmp_path
):
    tvm = tvm_compat.tvm()
    executable = tvm_compat.compile(_relax_model(3), tvm.target.Target({"kind": "llvm"}), parts=3)
    assert tvm_compat.export_objects(executable, str(tmp_path)) is not None
    defining = next(c for c in type(executable.mod).__mro__ if "_collect_dso_modules" in vars(c))
    monkeypatch.delattr(defining, "_collect_dso_modules")
    assert tvm_compat.export_objects(executable, str(tmp_path)) is None
