"""Every GPU path on a machine without a GPU stops at once with ``NoGPUError`` (never a hang,
never a crash), and says how to run it elsewhere (``--rpc``). Skipped where a GPU is present."""

from __future__ import annotations

import time

import numpy as np
import pytest
from build_support import listing, matmul, vector_add_gpu

from mlc_jupyter.compilation import build_module, gpu_present
from mlc_jupyter.errors import NoGPUError

pytestmark = pytest.mark.skipif(gpu_present("cuda"), reason="a CUDA GPU is present")

#: Far less than building anything for a GPU, let alone tuning for one.
FAST_S = 10


def _fails_fast(shell, line: str) -> NoGPUError:
    start = time.perf_counter()
    result = shell.run_cell(line, store_history=True)
    assert time.perf_counter() - start < FAST_S
    err = result.error_in_exec
    assert isinstance(err, NoGPUError), err
    assert "--rpc HOST:PORT:KEY" in err.hint
    return err


def test_mlc_time_on_a_cuda_build_says_no_gpu_is_present(shell):
    shell.user_ns["VecAdd"] = vector_add_gpu()
    shell.run_line_magic("mlc_build", "VecAdd --target cuda")
    err = _fails_fast(shell, '%mlc_time VecAdd_lib --ref "A + B"')
    assert str(err) == "no GPU is present: main was built for cuda and cannot run here"


def test_mlc_time_of_a_module_not_built_yet_stops_before_building_it(shell):
    shell.user_ns["VecAdd"] = vector_add_gpu()
    err = _fails_fast(shell, "%mlc_time VecAdd --target cuda")
    assert "the module to time is for cuda" in str(err)


def test_calling_a_cuda_build_says_no_gpu_is_present():
    built = build_module(vector_add_gpu(), "cuda")
    a = np.ones(1024, "float32")
    with pytest.raises(NoGPUError, match="main was built for cuda"):
        built(a, a)


def test_mlc_tune_for_cuda_without_rpc_says_no_gpu_before_building_candidates(shell):
    shell.user_ns["MM"] = matmul(64)
    err = _fails_fast(shell, "%mlc_tune MM --target cuda --trials 8")
    assert "needs a CUDA GPU, and this machine has none" in str(err)


def test_timing_the_steps_of_a_gpu_schedule_shows_no_gpu_on_each_step():
    from mlc_jupyter.schedule import ScheduleSession
    from mlc_jupyter.widgets import ScheduleStepper

    cell = (
        'block_C = sch.get_block("C")\n'
        "i, = sch.get_loops(block=block_C)\n"
        "i0, i1 = sch.split(i, [None, 128])\n"
        'sch.bind(i0, "blockIdx.x")\n'
        'sch.bind(i1, "threadIdx.x")\n'
    )
    session = ScheduleSession(listing("ch6_vector_add.py", "MyModuleVecAdd"), cell, first_line=2)
    stepper = ScheduleStepper(session, target="cuda")
    start = time.perf_counter()
    for step in range(len(session.run.steps) + 1):
        stepper.time_step(step)
    assert time.perf_counter() - start < FAST_S
    errors = [row["error"] for row in stepper.timings]
    assert len(errors) == len(session.run.steps) + 1
    assert all("no GPU is present" in e for e in errors), errors


def test_mlc_time_of_a_cuda_tuning_result_says_no_gpu_rather_than_building_it_for_the_cpu(shell):
    from build_support import cuda_tune_result

    shell.user_ns["MM_tuned"] = cuda_tune_result()
    err = _fails_fast(shell, '%mlc_time MM_tuned --ref "A @ B"')
    assert "the module to time is for cuda" in str(err)


def test_the_gpu_bench_says_it_needs_a_gpu_and_runs_nothing():
    import subprocess
    import sys
    from pathlib import Path

    bench = Path(__file__).resolve().parents[2] / "bench" / "bench_gpu.py"
    done = subprocess.run([sys.executable, str(bench)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "bench_gpu.py needs a CUDA GPU: TVM finds none on this machine" in done.stderr
    assert "Traceback" not in done.stderr
