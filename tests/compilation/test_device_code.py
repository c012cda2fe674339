"""CUDA builds are compiled to GPU code at build time (nvcc, then ptxas), with no GPU needed.

A kernel the GPU compiler rejects is a build error that names the kernel and the CUDA line (and,
from a notebook, the cell line that wrote the offending name); the book's chapter 6 kernels
compile to cubins, and ptxas's report shows what each kernel uses.
"""

from __future__ import annotations

import pytest
from build_support import (
    blocking,
    blocking_with_shared,
    gpu_matmul,
    parse,
    vector_add_gpu,
    window_sum_gpu,
)

from mlc_jupyter.compilation import build_module
from mlc_jupyter.compilation.device_code import (
    failed_kernel_compile,
    find_nvcc,
    kernel_error,
)
from mlc_jupyter.display.build import built_text
from mlc_jupyter.errors import KernelCompileError
from mlc_jupyter.tvm_compat import nvcc_compile

needs_nvcc = pytest.mark.skipif(find_nvcc() is None, reason="nvcc (the CUDA toolkit) is absent")

UNDEFINED_DEVICE_FUNCTION = """
@I.ir_module
class CallsUnknown:
    @T.prim_func
    def main(A: T.Buffer((256,), "float32"), B: T.Buffer((256,), "float32")):
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        for i0 in T.thread_binding(2, thread="blockIdx.x"):
            for i1 in T.thread_binding(128, thread="threadIdx.x"):
                with T.block("B"):
                    vi = T.axis.spatial(256, i0 * 128 + i1)
                    B[vi] = T.call_extern("float32", "my_device_fn", A[vi])
"""

#: The book's chapter 6 GPU kernels and the static shared memory each block uses: the window
#: sum's shared stage is compacted to the 130 elements a block reads; the shared-memory matmul
#: stages a 64x8 tile of A and of B.
BOOK_KERNELS = {
    "6.1.3 vector add": (vector_add_gpu, 0),
    "6.1.4 window sum": (window_sum_gpu, 130 * 4),
    "6.1.5 local blocking": (lambda: gpu_matmul(blocking, 8, 8, 8, 8, 4), 0),
    "6.1.6 shared-memory blocking": (
        lambda: gpu_matmul(blocking_with_shared, 8, 8, 8, 8, 8),
        2 * 64 * 8 * 4,
    ),
}


@needs_nvcc
@pytest.mark.parametrize("name", list(BOOK_KERNELS))
def test_the_books_chapter_6_kernels_compile_to_cubins_here(name):
    make, shared_bytes = BOOK_KERNELS[name]
    code = build_module(make(), "cuda").device_code
    assert code.compiled and code.cubin.startswith(b"\x7fELF"), code.note
    assert code.arch == "sm_80"  # no GPU to ask: the documented fallback architecture
    (kernel,) = code.kernels
    assert kernel.name == "main_kernel" and kernel.registers > 0
    assert kernel.shared_bytes == shared_bytes


@needs_nvcc
def test_a_cuda_build_shows_its_device_code_and_its_ptx():
    built = build_module(vector_add_gpu(), "cuda", force=True)
    assert "device code: sm_80 cubin by nvcc" in built_text(built)
    assert "main_kernel:" in built_text(built) and "registers" in built_text(built)
    ptx = built.source("ptx")
    assert ".target sm_80" in ptx and ".entry main_kernel" in ptx


@needs_nvcc
def test_a_kernel_calling_an_undefined_device_function_fails_at_build_time_at_its_cuda_line():
    with pytest.raises(KernelCompileError) as info:
        build_module(parse(UNDEFINED_DEVICE_FUNCTION), "cuda")
    err = info.value
    assert 'rejected kernel main_kernel: identifier "my_device_fn" is undefined' in str(err)
    assert err.kernel == "main_kernel" and err.words == ("my_device_fn",)
    assert "my_device_fn(A_ptr[" in err.cuda_text
    rendered = "\n".join(err.render_lines())
    assert f"CUDA line {err.cuda_line} | B_ptr[" in rendered
    assert "hint: a T.call_extern" in rendered


@needs_nvcc
def test_the_books_shared_memory_matmul_with_too_large_tiles_fails_at_build_time():
    # tile_k=128 stages 64x128 floats of A and of B: 64 KB, over a block's 48 KB
    with pytest.raises(KernelCompileError) as info:
        build_module(gpu_matmul(blocking_with_shared, 8, 8, 8, 8, 128), "cuda")
    assert str(info.value) == (
        "ptxas rejected kernel main_kernel: Entry function 'main_kernel' uses too much shared "
        "data (65536 bytes, 49152 max)"
    )
    assert "smaller tiles" in info.value.hint


@needs_nvcc
def test_mlc_build_points_at_the_cell_line_that_named_the_rejected_function(shell):
    shell.run_cell("%%tir --quiet\n" + UNDEFINED_DEVICE_FUNCTION.strip(), store_history=True)
    number = shell.execution_count - 1
    result = shell.run_cell("%mlc_build CallsUnknown --target cuda", store_history=True)
    err = result.error_in_exec
    assert isinstance(err, KernelCompileError)
    label, line, text = err.cell
    assert (label, line) == (f"cell In[{number}]", 11)
    assert 'T.call_extern("float32", "my_device_fn", A[vi])' in text
    shown = "\n".join(err.render_lines())
    assert f"  cell In[{number}], line 11 | B[vi] = T.call_extern(" in shown


@needs_nvcc
def test_the_error_of_tvms_own_nvcc_compile_is_located_the_same_way():
    built = build_module(window_sum_gpu(), "cuda")
    broken = built.source("cuda").replace("__syncthreads();", "__syncthreadz();")
    with pytest.raises(RuntimeError) as info:  # what TVM's compile callback raises on a GPU
        nvcc_compile(broken, built.target)
    err = failed_kernel_compile(info.value)
    assert isinstance(err, KernelCompileError)
    assert str(err) == 'nvcc rejected kernel main_kernel: identifier "__syncthreadz" is undefined'
    assert err.cuda_text.strip() == "__syncthreadz();"


def test_an_nvrtc_error_is_mapped_back_to_the_line_of_the_source_tvm_generated():
    # NVRTC compiles the source without its '#include <cuda.h>' line, so its line numbers
    # after that line are one lower than the generated source's.
    source = '#include <cstdint>\n#include <cuda.h>\nextern "C" __global__ void k_kernel(float* x) {\n  y[0] = 1;\n}\n'
    message = 'NVRTC compilation failed:\ntvm_kernels.cu(3): error: identifier "y" is undefined\n'
    err = kernel_error(source, message)
    assert str(err) == 'NVRTC rejected kernel k_kernel: identifier "y" is undefined'
    assert err.cuda_line == 4 and err.cuda_text.strip() == "y[0] = 1;"


def test_without_nvcc_a_cuda_build_still_builds_and_says_it_was_not_compiled(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CUDA_PATH", str(tmp_path))
    find_nvcc.cache_clear()
    try:
        built = build_module(vector_add_gpu(), "cuda", force=True)
    finally:
        find_nvcc.cache_clear()
    assert not built.device_code.compiled
    assert "device code: not compiled: nvcc not found" in built_text(built)


@needs_nvcc
def test_an_architecture_this_nvcc_cannot_build_for_is_said_not_compiled():
    built = build_module(vector_add_gpu(), "cuda -arch=sm_20")
    assert "__global__" in built.source("cuda")
    assert built.device_code.note.startswith("not compiled: nvcc")
    assert "cannot build for sm_20" in built.device_code.note


def test_the_books_metal_build_of_the_window_sum_shows_its_kernel(shell):
    # book §6.1.4, "Build Code for Other GPU Platforms": the same schedule for Metal
    shell.user_ns["WinSum"] = window_sum_gpu()
    shell.run_line_magic("mlc_build", "WinSum --target metal")
    source = shell.user_ns["WinSum_lib"].source("metal")
    assert "kernel void main_kernel(" in source and "threadgroup float A_shared" in source


@needs_nvcc
def test_a_cuda_compile_that_runs_past_its_limit_is_stopped_and_names_nvcc(monkeypatch):
    from mlc_jupyter.errors import BuildError

    build_module(vector_add_gpu(), "cuda", force=True)  # the toolkit's version is known
    monkeypatch.setenv("MLC_JUPYTER_COMPILER_TIMEOUT_S", "0.001")
    with pytest.raises(BuildError, match=r"^nvcc did not finish within 0\.001 s and was stopped"):
        build_module(vector_add_gpu(), "cuda", force=True)
