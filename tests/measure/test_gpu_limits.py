"""A GPU's limits: the measuring kernels build for CUDA and compile to GPU code here (no GPU
needed); measuring them needs one (``tests/gpu/test_gpu_cuda_results.py``)."""

from __future__ import annotations

import pytest

from mlc_jupyter.compilation import gpu_present, resolve_target
from mlc_jupyter.compilation.device_code import device_code_of, find_nvcc
from mlc_jupyter.display.roofline import limits_text
from mlc_jupyter.errors import NoGPUError
from mlc_jupyter.measure.gpu_limits import device_limits, kernels_module
from mlc_jupyter.measure.machine import MachineLimits
from mlc_jupyter.tvm_compat import compile as tvm_compile


@pytest.mark.skipif(find_nvcc() is None, reason="nvcc (the CUDA toolkit) is absent")
def test_the_fma_tensor_core_and_copy_kernels_compile_to_gpu_code():
    target = resolve_target("cuda -arch=sm_90a")
    code = device_code_of(tvm_compile(kernels_module(), target), target)
    assert code.compiled, code.note
    assert {k.name for k in code.kernels} == {"fma_kernel", "mma_kernel", "copy_kernel"}
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in code.ptx and "fma.rn" in code.ptx
    assert all(k.spill_bytes == 0 for k in code.kernels)  # the chains stay in registers


def test_a_gpus_limits_read_as_three_figures():
    limits = MachineLimits(
        machine="NVIDIA H100 80GB HBM3 | sm_90a | TVM 0.27",
        cores=1,
        peak_gflops={1: {32: 51000.0}},
        bandwidth_gbs={1: 3000.0},
        measured_at="2026-11-25T12:00:00",
        tensor_gflops=400000.0,
    )
    text = limits_text(limits)
    assert "fp32 FMA peak:           51000.0 GFLOP/s" in text
    assert "tensor cores (fp16 mma.sync, fp32 accumulate): 400000.0 GFLOP/s" in text
    assert "memory bandwidth:         3000.0 GB/s" in text
    assert limits.roof(1.0) == pytest.approx(3000.0) and limits.roof(100.0) == 51000.0


@pytest.mark.skipif(gpu_present("cuda"), reason="a CUDA GPU is present")
def test_without_a_gpu_mlc_machine_for_cuda_says_so_and_timings_have_no_gpu_peak(shell):
    result = shell.run_cell("%mlc_machine --target cuda", store_history=True)
    assert isinstance(result.error_in_exec, NoGPUError)
    assert "no GPU is present: the limits asked for are cuda" in str(result.error_in_exec)
    assert device_limits(resolve_target("cuda -arch=sm_90a"), ["float32"]) is None
