"""Chapter 6 (GPU and hardware acceleration): every listing parses through ``%%tir``.

There is no GPU here: the GPU schedules of part 1 are built for CUDA and their kernel source is
checked, never run; the unscheduled modules and part 2's tensorized blocks run on the CPU.
"""

from __future__ import annotations

import numpy as np
import pytest
from build_support import blocking, blocking_with_shared
from course_support import build, call, cuda_source, run_listing

from mlc_jupyter import tvm_compat

RNG = np.random.default_rng(6)


def test_vector_add_runs_on_cpu_and_its_gpu_schedule_becomes_a_cuda_kernel(shell):
    mod = run_listing(shell, "ch6_vector_add")
    a, b = RNG.random(1024, dtype="float32"), RNG.random(1024, dtype="float32")
    c = call(build(mod), "main", a, b, np.zeros(1024, "float32"))[-1]
    np.testing.assert_allclose(c, a + b)

    sch = tvm_compat.Schedule(mod)
    (i,) = sch.get_loops(block=sch.get_sblock("C"))
    i0, i1 = sch.split(i, [None, 128])
    sch.bind(i0, "blockIdx.x")
    sch.bind(i1, "threadIdx.x")
    source = cuda_source(sch.mod)
    assert "__global__" in source and "blockIdx.x" in source and "threadIdx.x" in source


def test_window_sum_runs_on_cpu_and_its_shared_memory_schedule_becomes_a_cuda_kernel(shell):
    mod = run_listing(shell, "ch6_window_sum")
    a = RNG.random(1027, dtype="float32")
    b = call(build(mod), "main", a, np.zeros(1024, "float32"))[-1]
    np.testing.assert_allclose(b, a[:1024] + a[1:1025] + a[2:1026], rtol=1e-6)

    sch = tvm_compat.Schedule(mod)
    nthread = 128
    block_c = sch.get_sblock("C")
    (i,) = sch.get_loops(block=block_c)
    i0, i1 = sch.split(i, [None, nthread])
    sch.bind(i0, "blockIdx.x")
    sch.bind(i1, "threadIdx.x")
    a_shared = sch.cache_read(block_c, read_buffer_index=0, storage_scope="shared")
    sch.compute_at(a_shared, i1)
    ax = sch.get_loops(a_shared)[-1]
    _ax0, ax1 = sch.split(ax, [None, nthread])
    sch.bind(ax1, "threadIdx.x")
    source = cuda_source(sch.mod)
    # The shared stage is compacted to the 130 elements one thread block reads.
    assert "__shared__ alignas(64) float A_shared_ptr[130];" in source
    assert "__syncthreads();" in source


@pytest.mark.parametrize(
    ("schedule", "marker"),
    [
        (blocking, "float C_local_ptr[64];"),  # an 8x8 tile of C per thread
        (blocking_with_shared, "*(float4*)(A_shared_ptr"),  # vectorised cooperative fetch
    ],
    ids=["local-blocking", "shared-memory-blocking"],
)
def test_gpu_matmul_schedules_of_the_book_become_cuda_kernels(shell, schedule, marker):
    mod = run_listing(shell, "ch6_matmul")
    sch = schedule(tvm_compat.Schedule(mod), 8, 8, 8, 8, 4 if schedule is blocking else 8)
    source = cuda_source(sch.mod)
    assert "__global__" in source
    assert marker in source


def test_tensorized_block_module_computes_a_times_b_transposed(shell):
    mod = run_listing(shell, "ch6_matmul_tensorized_block")
    a = RNG.random((1024, 1024), dtype="float32")
    b = RNG.random((1024, 1024), dtype="float32")
    sch = tvm_compat.Schedule(mod)  # the book's loop transformation around the tensorized block
    i, j, k = sch.get_loops(sch.get_sblock("tmm-16x16"))
    i0, i1 = sch.split(i, [None, 4])
    sch.reorder(i0, j, i1, k)
    for m in (mod, sch.mod):
        c = call(build(m), "main", a, b, np.zeros((1024, 1024), "float32"))[-1]
        np.testing.assert_allclose(c, a @ b.T, rtol=1e-4)


def test_blockize_scopes_and_tensorize_map_the_matmul_onto_the_tmm16_intrinsic(shell):
    mod = run_listing(shell, "ch6_matmul_blockize")
    intrin = run_listing(shell, "ch6_tmm16_intrin")
    assert intrin is shell.user_ns["tmm16_impl"]
    sch = tvm_compat.Schedule(mod)
    i, j, k = sch.get_loops("matmul")
    i, ii = sch.split(i, factors=[None, 16])
    j, ji = sch.split(j, factors=[None, 16])
    k, ki = sch.split(k, factors=[None, 16])
    sch.reorder(i, j, k, ii, ji, ki)
    block_mm = sch.blockize(ii)
    assert 'T.sblock("matmul_o")' in sch.mod.script()
    a = RNG.random((1024, 1024), dtype="float32")
    b = RNG.random((1024, 1024), dtype="float32")
    c = call(build(sch.mod), "main", a, b, np.zeros((1024, 1024), "float32"))[-1]
    np.testing.assert_allclose(c, a @ b.T, rtol=1e-4)
    a_reg = sch.cache_read(block_mm, 0, storage_scope="global.A_reg")
    b_reg = sch.cache_read(block_mm, 1, storage_scope="global.B_reg")
    sch.compute_at(a_reg, k)
    sch.compute_at(b_reg, k)
    write_back_block = sch.cache_write(block_mm, 0, storage_scope="global.accumulator")
    sch.reverse_compute_at(write_back_block, j)
    sch.decompose_reduction(block_mm, k)
    name = f"tmm16_course_{id(intrin)}"  # registered once per parsed intrinsic
    tvm_compat.s_tir().TensorIntrin.register(
        name, shell.user_ns["tmm16_desc"], shell.user_ns["tmm16_impl"]
    )
    sch.tensorize(block_mm, name)
    assert 'T.call_extern("int32", "tmm16"' in sch.mod.script()
