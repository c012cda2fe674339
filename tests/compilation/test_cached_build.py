"""build_module: PrimFunc / TensorIR / Relax builds, the cache, calls, and the traps of TVM 0.27."""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess

import numpy as np
import pytest
import torch
from build_support import (
    COURSE_TARGET,
    MISSING_EXTERN,
    RELAX_ADD,
    cuda_tune_result,
    listing,
    mm_relu,
    parse,
    through_local_buffer,
    transform,
    vector_add_gpu,
    window_sum_gpu,
)
from IPython.utils.capture import capture_output

from mlc_jupyter.compilation import build_module, clear_cache, gpu_present
from mlc_jupyter.compilation.cached_build import MAX_COMPILE_PARTS, compile_parts
from mlc_jupyter.compilation.targets import resolve_target
from mlc_jupyter.errors import BuildError, CallError, NoGPUError
from mlc_jupyter.tvm_compat import empty, tensor


@pytest.fixture(scope="module")
def ab():
    rng = np.random.default_rng(1)
    return rng.random((128, 128), dtype="float32"), rng.random((128, 128), dtype="float32")


@pytest.fixture(scope="module")
def lib():
    return build_module(mm_relu(), COURSE_TARGET)


def test_passing_only_the_inputs_returns_the_output(lib, ab):
    a, b = ab
    np.testing.assert_allclose(lib.mm_relu(a, b), np.maximum(a @ b, 0), rtol=1e-4)


def test_a_function_is_reachable_by_index_and_fills_a_numpy_output(lib, ab):
    a, b = ab
    c = np.zeros((128, 128), "float32")
    assert lib["mm_relu"](a, b, c) is None
    np.testing.assert_allclose(c, np.maximum(a @ b, 0), rtol=1e-4)


def test_torch_tensors_in_give_a_torch_tensor_out(lib, ab):
    a, b = ab
    out = lib.mm_relu(torch.from_numpy(a), torch.from_numpy(b))
    assert isinstance(out, torch.Tensor)
    np.testing.assert_allclose(out.numpy(), np.maximum(a @ b, 0), rtol=1e-4)


def test_tvm_tensors_work_as_in_the_book(lib, ab):
    a, b = ab
    c = empty((128, 128), "float32")
    lib.mm_relu(tensor(a), tensor(b), c)
    np.testing.assert_allclose(c.numpy(), np.maximum(a @ b, 0), rtol=1e-4)


def test_a_rebuild_of_an_unchanged_module_comes_from_the_cache():
    clear_cache()
    first = build_module(mm_relu(), COURSE_TARGET)
    again = build_module(mm_relu(), COURSE_TARGET)
    assert not first.cached and again.cached
    assert again.executable is first.executable


def test_force_and_another_target_rebuild():
    build_module(mm_relu(), COURSE_TARGET)
    assert not build_module(mm_relu(), COURSE_TARGET, force=True).cached
    assert not build_module(mm_relu(), "llvm -num-cores=1").cached


def test_a_scheduled_variant_is_a_different_cache_entry(ab):
    build_module(mm_relu(), COURSE_TARGET)
    built = build_module(transform(mm_relu(), 8), COURSE_TARGET)
    assert not built.cached
    a, b = ab
    np.testing.assert_allclose(built.mm_relu(a, b), np.maximum(a @ b, 0), rtol=1e-4)


def test_a_schedule_builds_its_current_module(ab):
    from mlc_jupyter.tvm_compat import Schedule

    sch = Schedule(mm_relu())
    built = build_module(sch, COURSE_TARGET)
    a, b = ab
    np.testing.assert_allclose(built.mm_relu(a, b), np.maximum(a @ b, 0), rtol=1e-4)


def test_something_that_is_not_a_module_is_refused_with_what_is_accepted():
    with pytest.raises(BuildError, match="a Schedule or a tuning result, not int"):
        build_module(3, COURSE_TARGET)


def test_a_prim_func_builds_on_its_own(ab):
    built = build_module(mm_relu()["mm_relu"], COURSE_TARGET)
    assert built.functions == ["mm_relu"]


def test_a_relax_module_runs_through_the_vm():
    built = build_module(parse(RELAX_ADD, "relax"))
    x, y = np.ones((4, 4), "float32"), np.full((4, 4), 2.0, "float32")
    np.testing.assert_allclose(built.main(x, y), x + 2 * y)


def test_a_wrong_shape_names_the_argument_and_the_expected_shape(lib, ab):
    a, b = ab
    with pytest.raises(
        CallError, match=r"argument 'A' has shape \(64, 128\), expected A: \(128, 128\) float32"
    ):
        lib.mm_relu(a[:64], b)


def test_a_wrong_dtype_names_the_argument(lib, ab):
    a, b = ab
    with pytest.raises(CallError, match="argument 'B' has dtype float64, expected"):
        lib.mm_relu(a, b.astype("float64"))


def test_a_wrong_number_of_arguments_lists_the_parameters(lib, ab):
    with pytest.raises(CallError, match=r"mm_relu takes 2 inputs \(or 3 with outputs\)"):
        lib.mm_relu(ab[0])


def test_an_unknown_function_name_lists_the_functions(lib):
    with pytest.raises(CallError, match="no function 'main' in this build; it has mm_relu"):
        lib["main"]


def test_a_missing_extern_symbol_is_refused_before_the_kernel_crashes():
    built = build_module(parse(MISSING_EXTERN))
    with pytest.raises(
        BuildError, match=r"mlc_no_such_symbol \(called at cell line 6\) are not defined"
    ):
        built.calls_missing(np.ones(4, "float32"), np.ones(4, "float32"))


def test_an_unbound_gpu_kernel_is_refused_at_build_time():
    with pytest.raises(BuildError, match="loops are not bound to blockIdx/threadIdx"):
        build_module(listing("ch6_vector_add.py", "MyModuleVecAdd"), "cuda")


def test_the_book_vector_add_builds_for_cuda_and_shows_its_source():
    source = build_module(vector_add_gpu(), "cuda").source("cuda")
    assert "__global__" in source and "blockIdx.x" in source and "threadIdx.x" in source


def test_the_book_window_sum_builds_for_cuda_with_shared_memory():
    source = build_module(window_sum_gpu(), "cuda").source("cuda")
    assert "__global__" in source and "__shared__" in source


@pytest.mark.skipif(gpu_present("cuda"), reason="a GPU is present")
def test_running_a_cuda_build_without_a_gpu_says_so():
    built = build_module(vector_add_gpu(), "cuda")
    x = np.ones(1024, "float32")
    with pytest.raises(NoGPUError, match="no GPU is present: main was built for cuda"):
        built.main(x, x)


def test_llvm_and_asm_sources_are_available(lib):
    assert "define" in lib.source("llvm")
    assert ".text" in lib.source("asm") or "mm_relu" in lib.source("asm")


def test_a_cpu_build_keeps_a_register_tile_off_the_heap():
    # a local buffer (a tile's accumulators) is a stack allocation LLVM keeps in registers,
    # not a workspace taken and cleared at every tile (tvm_compat.register_tiles_pipeline)
    built = build_module(through_local_buffer(448), force=True)
    assert "TVMBackendAllocWorkspace" not in built.source("llvm")
    x = np.arange(448, dtype="float32")
    np.testing.assert_array_equal(built.main(x), x * 2 + 1)


def test_asking_for_cuda_source_of_a_cpu_build_says_how_to_get_it(lib):
    with pytest.raises(BuildError, match="no CUDA code: the module was built for llvm"):
        lib.source("cuda")


def test_a_build_failure_is_one_line():
    with pytest.raises(
        BuildError,
        match="a PrimFunc, an IRModule, a Relax function, a Schedule or a tuning result, not str",
    ):
        build_module("not a module")


PROVIDED_EXTERN = """
@T.prim_func
def calls_provided(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
    T.func_attr({"global_symbol": "calls_provided", "tirx.noalias": True})
    T.evaluate(T.call_extern("int32", "mlc_test_add_one", A.data, B.data))
"""


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_an_extern_symbol_loaded_into_the_process_is_called(tmp_path):
    src = tmp_path / "add_one.c"
    src.write_text(
        "int mlc_test_add_one(float* a, float* b) {"
        " for (int i = 0; i < 4; ++i) b[i] = a[i] + 1.0f; return 0; }\n"
    )
    lib_path = tmp_path / "libadd_one.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib_path), str(src)], check=True)
    ctypes.CDLL(str(lib_path), mode=ctypes.RTLD_GLOBAL)
    built = build_module(parse(PROVIDED_EXTERN))
    b = np.zeros(4, "float32")
    built.calls_provided(np.arange(4, dtype="float32"), b)
    np.testing.assert_allclose(b, np.arange(4) + 1.0)


def test_a_cuda_tuning_result_builds_for_the_gpu_it_was_tuned_for_and_exports(shell, tmp_path):
    """``%mlc_build MM_tuned`` without --target: CUDA, as tuned (it used to build for llvm and
    fail with TVM's "Unknown device id in current IR")."""
    shell.user_ns["MM_tuned"] = cuda_tune_result()
    with capture_output():
        shell.run_line_magic("mlc_build", "MM_tuned")
    built = shell.user_ns["MM_tuned_lib"]
    assert built.target.kind.name == "cuda" and str(built.target.attrs["arch"]) == "sm_90a"
    assert "threadIdx" in built.source("cuda")
    path = tmp_path / "mm_tuned.so"
    built.executable.export_library(str(path))  # a GPU machine loads and compiles it
    assert path.stat().st_size > 0


def test_gpu_kernels_built_for_the_cpu_are_refused_with_the_target_to_use():
    with pytest.raises(BuildError) as caught:
        build_module(cuda_tune_result().mod, "llvm")
    assert "loops are bound to blockIdx/threadIdx, so these are GPU kernels" in str(caught.value)
    assert "cannot be built for llvm" in str(caught.value)
    assert caught.value.hint == "build for the GPU they were scheduled for: --target cuda"


def test_a_cpu_build_compiles_its_kernels_in_a_part_per_core_and_a_gpu_build_in_one():
    cores = len(os.sched_getaffinity(0))
    assert compile_parts(resolve_target(None)) == max(1, min(cores, MAX_COMPILE_PARTS))
    assert compile_parts(resolve_target({"kind": "cuda", "arch": "sm_90a"})) == 1
