"""Contract of tvm_compat/runtime.py: tensors from NumPy and back, thread pools, benchmark
results, and loading a library written by ``export_library``. A failure names what TVM changed."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mlc_jupyter import tvm_compat


def test_tensors_pools_benchmarks_and_exported_libraries_behave_as_0_27s(tmp_path):
    data = np.arange(6, dtype="float32").reshape(2, 3)
    t = tvm_compat.tensor(data)
    assert isinstance(t, tvm_compat.tensor_type()), f"tensor() gave a {type(t)}"
    np.testing.assert_array_equal(t.numpy(), data)
    e = tvm_compat.empty((2, 3), "float32")
    assert tuple(e.shape) == (2, 3) and str(e.dtype) == "float32"
    tvm_compat.config_thread_pool(1)  # the global it calls must exist
    result = tvm_compat.benchmark_result_type()([3.0, 1.0, 2.0])
    assert result.median == 2.0 and result.min == 1.0, "BenchmarkResult's fields changed"

    te = tvm_compat.tvm().te
    a = te.placeholder((4,), name="A")
    func = te.create_prim_func([a, te.compute((4,), lambda i: a[i] * 3.0, name="B")])
    path = str(tmp_path / "kernel.so")
    built = tvm_compat.compile(func.with_attr("global_symbol", "main"), "llvm")
    assert isinstance(built, tvm_compat.executable_type()), f"tvm.compile gave a {type(built)}"
    built.export_library(path)
    loaded = tvm_compat.load_executable(path, relax=False)
    out = tvm_compat.empty((4,))
    loaded["main"](tvm_compat.tensor(np.ones(4, "float32")), out)
    np.testing.assert_array_equal(out.numpy(), np.full(4, 3.0, "float32"))
    memory = np.zeros(4 + 16, "float32")  # a view that is 64-byte aligned, as mmap'd memory is
    start = (-memory.ctypes.data % 64) // 4
    written = memory[start : start + 4]
    loaded["main"](tvm_compat.tensor(np.ones(4, "float32")), tvm_compat.tensor_view(written))
    np.testing.assert_array_equal(written, np.full(4, 3.0, "float32"))  # no copy: written there


def test_the_exported_loaders_runtime_code_runs_on_this_tvm():
    names = {"tvm": tvm_compat.tvm()}
    exec(tvm_compat.LOADER_RUNTIME, names)  # noqa: S102 - the loader's own text, as it runs it
    device = names["_device"]("llvm")
    out = names["_tensor"](np.arange(3, dtype="float32"), device)
    np.testing.assert_array_equal(out.numpy(), np.arange(3, dtype="float32"))


#: A Relax model of one kernel, in the course's spelling (``parse_relax`` reads it).
TWICE = """
@I.ir_module
class Twice:
    @T.prim_func
    def double(a: T.Buffer((64,), "float32"), b: T.Buffer((64,), "float32")):
        for i in range(64):
            with T.block("double"):
                vi = T.axis.spatial(64, i)
                b[vi] = a[vi] * T.float32(2)

    @R.function
    def main(x: R.Tensor((64,), "float32")) -> R.Tensor((64,), "float32"):
        cls = Twice
        return R.call_tir(cls.double, (x,), out_sinfo=R.Tensor((64,), "float32"))
"""


def test_a_relax_builds_kernels_are_timed_by_symbol_with_cold_caches():
    from mlc_jupyter import parse_relax

    executable = tvm_compat.compile(parse_relax(TWICE), "llvm")
    library = tvm_compat.kernel_library(executable, "double")
    assert library is not None, "the kernels are not among the VM module's imports"
    assert library.implements_function("double")
    assert tvm_compat.kernel_library(executable, "main") is None  # the VM's own function
    a, b = tvm_compat.tensor(np.ones(64, "float32")), tvm_compat.empty((64,))
    timer = tvm_compat.kernel_timer(library, "double", tvm_compat.tvm().cpu(), 2, cold=True)
    assert len(timer(a, b).results) == 2, "time_evaluator's samples changed"
    np.testing.assert_array_equal(b.numpy(), np.full(64, 2.0, "float32"))


def test_a_relax_builds_vm_written_alone_runs_the_kernels_of_a_kernels_only_library(tmp_path):
    """``write_vm`` writes the bytecode and constants; ``export_objects(pack_vm=False)`` gives the
    kernels' objects only; ``load_executable(..., vm=bytes)`` and ``with_kernels`` join them."""
    tvm = tvm_compat.tvm()
    relax, te = tvm.relax, tvm.te
    weight = np.arange(16, dtype="float32").reshape(4, 4)
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((4, 4), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            w = relax.const(weight)
            y = bb.emit_te(lambda a, b: te.compute((4, 4), lambda i, j: a[i, j] + b[i, j]), x, w)
            out = bb.emit_output(y)
        bb.emit_func_output(out)
    target = tvm.target.Target({"kind": "llvm"})
    data = np.ones((4, 4), "float32")

    def run(executable):
        vm = relax.VirtualMachine(executable, tvm.cpu())
        return vm["main"](tvm_compat.tensor(data)).numpy()

    executable = tvm_compat.compile(bb.get(), target)
    objects = tvm_compat.export_objects(executable, str(tmp_path), pack_vm=False)
    assert objects is not None and all(not Path(o).name.endswith("devc.o") for o in objects)
    library = str(tmp_path / "kernels.so")
    tvm_compat.link_shared(library, objects)
    tvm_compat.write_vm(executable, str(tmp_path / "vm.bin"))
    vm_bytes = (tmp_path / "vm.bin").read_bytes()
    assert weight.tobytes() in vm_bytes, "the VM's file lost its constants"
    loaded = tvm_compat.load_executable(library, relax=True, vm=vm_bytes)
    np.testing.assert_array_equal(run(loaded), weight + 1)
    joined = tvm_compat.with_kernels(executable, library)  # the fresh build, now on the library
    assert len(joined.mod.imports) == 1  # the library's kernels, none compiled in memory
    np.testing.assert_array_equal(run(joined), weight + 1)
