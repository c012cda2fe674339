"""A device behind an RPC tracker: timing there, tuning for it, and its refusals, all fast.

The tracker's servers (``rpc_tracker``, on loopback) run this machine's TVM: a CPU and no CUDA.
CPU modules are checked and timed on them; everything built for CUDA reaches the point where
the server is asked for its GPU and ends there with the server's answer, within seconds.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from build_support import matmul, vector_add_gpu
from rpc_support import KEY

from mlc_jupyter.compilation import build_module
from mlc_jupyter.compilation.device_code import find_nvcc
from mlc_jupyter.compilation.remote import parse_rpc, remote_target
from mlc_jupyter.errors import NoGPUError, RemoteError
from mlc_jupyter.measure import time_functions

NO_CUDA_THERE = r"the RPC server under key 'mlc-test' at 127\.0\.0\.1:\d+ has no cuda device"


def _spec(rpc_tracker) -> str:
    return f"127.0.0.1:{rpc_tracker[0]}:{KEY}"


def test_mlc_time_over_rpc_checks_and_times_on_the_server(rpc_tracker, shell):
    shell.user_ns["MM"] = matmul(128)
    shell.run_line_magic("mlc_build", "MM")
    before = sum(p.read_text().count("load_module") for p in rpc_tracker[1])
    report = shell.run_line_magic("mlc_time", f'MM_lib --ref "A @ B" --rpc {_spec(rpc_tracker)} -o')
    (row,) = report.timings  # no NumPy/PyTorch rows: they could only run here
    assert row.correct is True and row.median_s > 0 and row.gflops > 0
    assert row.target.endswith(f" on {_spec(rpc_tracker)}")
    assert sum(p.read_text().count("load_module") for p in rpc_tracker[1]) == before + 1


def test_without_a_reference_the_first_variant_run_on_the_server_is_the_reference(rpc_tracker):
    a, b = np.ones((128, 128), "float32"), np.eye(128, dtype="float32")
    report = time_functions(
        {"built": build_module(matmul(128)), "unbuilt": matmul(128)},
        args=(a, b),
        rpc=_spec(rpc_tracker),
    )
    assert [t.correct for t in report.timings] == [True, True]


def test_a_build_loaded_from_the_disk_cache_is_timed_on_the_server_too(rpc_tracker):
    from mlc_jupyter.compilation import clear_cache, disk_cache

    build_module(matmul(96))
    disk_cache.flush()
    clear_cache(disk=False)  # as after a kernel restart: the next build comes from disk
    built = build_module(matmul(96))
    assert built.from_disk
    (row,) = time_functions({"mm": built}, ref="A @ B", rpc=_spec(rpc_tracker)).timings
    assert row.correct is True and row.median_s > 0


def test_a_cuda_build_timed_on_a_server_without_a_gpu_gets_the_servers_answer(rpc_tracker):
    built = build_module(vector_add_gpu(), "cuda")  # built (and compiled, with nvcc) here
    start = time.perf_counter()
    with pytest.raises(RemoteError, match=NO_CUDA_THERE):
        time_functions({"vecadd": built}, rpc=_spec(rpc_tracker))
    assert time.perf_counter() - start < 30


def test_building_for_the_gpu_of_a_server_without_one_says_so(rpc_tracker, shell):
    shell.user_ns["VecAdd"] = vector_add_gpu()
    result = shell.run_cell(
        f"%mlc_build VecAdd --target cuda --rpc {_spec(rpc_tracker)}", store_history=True
    )
    assert isinstance(result.error_in_exec, RemoteError)
    assert "has no cuda device" in str(result.error_in_exec)
    assert "VecAdd_lib" not in shell.user_ns


def test_tuning_for_cuda_over_rpc_asks_the_server_for_its_gpu_first(rpc_tracker, monkeypatch):
    from mlc_jupyter.tune import tune

    host, port, key = _spec(rpc_tracker).split(":")
    for name, value in {"HOST": host, "PORT": port, "KEY": key}.items():
        monkeypatch.setenv(f"TVM_TRACKER_{name}", value)
    start = time.perf_counter()
    with pytest.raises(RemoteError, match=NO_CUDA_THERE):
        tune(matmul(64), "cuda", trials=8, rpc="env")
    assert time.perf_counter() - start < 30  # asked before building anything


def test_with_a_tracker_in_the_environment_a_gpu_this_machine_lacks_is_used_there(
    rpc_tracker, monkeypatch, shell
):
    from mlc_jupyter.compilation import gpu_present

    if gpu_present("cuda"):
        pytest.skip("a GPU is present: it is used")
    host, port, key = _spec(rpc_tracker).split(":")
    for name, value in {"HOST": host, "PORT": port, "KEY": key}.items():
        monkeypatch.setenv(f"TVM_TRACKER_{name}", value)
    shell.user_ns["VecAdd"] = vector_add_gpu()
    shell.user_ns["MM"] = matmul(64)
    shell.run_line_magic("mlc_build", "VecAdd --target cuda")  # a build needs no device
    for line in ("%mlc_time VecAdd_lib", "%mlc_tune MM --target cuda --trials 8"):
        err = shell.run_cell(line, store_history=True).error_in_exec
        assert isinstance(err, RemoteError), (line, err)  # asked the server, not refused here
        assert "has no cuda device" in str(err)
    (row,) = time_functions({"mm": build_module(matmul(64))}).timings  # a CPU module: here
    assert " on " not in row.target


def test_tuning_on_a_key_no_server_registered_is_refused_at_once(rpc_tracker):
    from mlc_jupyter.tune import tune

    with pytest.raises(RemoteError, match="no RPC server is registered under key 'nobody'") as info:
        tune(matmul(64), trials=8, rpc=f"127.0.0.1:{rpc_tracker[0]}:nobody")
    assert "registered: mlc-test" in str(info.value)
    assert "rpc_server --host 127.0.0.1" in info.value.hint  # TVM's default is 0.0.0.0


def test_tuning_for_cuda_without_rpc_on_a_machine_without_a_gpu_says_how_to_measure_remotely():
    from mlc_jupyter.compilation import gpu_present
    from mlc_jupyter.tune import tune

    if gpu_present("cuda"):
        pytest.skip("a GPU is present")
    with pytest.raises(NoGPUError, match="needs a CUDA GPU, and this machine has none") as info:
        tune(matmul(64), "cuda", trials=8)
    assert "--rpc HOST:PORT:KEY" in info.value.hint


def test_a_remote_target_asks_the_server_even_for_a_gpu_named_by_a_tag(rpc_tracker):
    spec = parse_rpc(_spec(rpc_tracker))
    assert remote_target(spec, "llvm").kind.name == "llvm"  # the server's CPU exists
    with pytest.raises(RemoteError, match=NO_CUDA_THERE):
        remote_target(spec, "nvidia/nvidia-a100")  # a tag says which GPU, not that one is there


@pytest.mark.slow
@pytest.mark.long
def test_metaschedules_cuda_candidates_are_built_for_the_gpu_and_the_server_says_it_has_none(
    rpc_tracker, tmp_path
):
    """The RPC path of a GPU tune, candidate by candidate: MetaSchedule's own CUDA design space
    (tensor-core rules for sm_80) built by the tuner's builder into exported libraries holding
    CUDA kernels (which nvcc compiles here), sent by the tuner's runner to a server without a
    GPU, which answers with its reason instead of a hang."""
    from mlc_jupyter.compilation import resolve_target
    from mlc_jupyter.compilation.intrinsics import load_tensor_intrinsics
    from mlc_jupyter.tune.rpc import make_rpc_runner
    from mlc_jupyter.tune.search.candidate_builder import InProcessBuilder
    from mlc_jupyter.tune.search.run_state import Shared
    from mlc_jupyter.tune.tasks import collect_tasks
    from mlc_jupyter.tvm_compat import metaschedule

    ms = metaschedule()
    target = resolve_target("nvidia/nvidia-a100")  # a whole device: nothing to ask a server
    load_tensor_intrinsics("cuda")
    task = collect_tasks(matmul(256), target).mods[0]
    context = ms.TuneContext(
        mod=task, target=target, space_generator="post-order-apply", task_name="main", rand_state=1
    )
    candidates = [
        sch.mod
        for sch in context.generate_design_space()
        if all(post.apply(sch) for post in context.space_generator.postprocs)
    ]
    assert candidates
    built = InProcessBuilder(Shared(), str(tmp_path)).build(
        [ms.builder.BuilderInput(mod, target) for mod in candidates]
    )
    assert all(b.error_msg is None for b in built), [b.error_msg for b in built]
    for result, mod in zip(built, candidates, strict=True):
        assert b"__global__ void" in Path(result.artifact_path).read_bytes()
        if find_nvcc():
            assert build_module(mod, target).device_code.compiled
    runner, _ = make_rpc_runner(parse_rpc(_spec(rpc_tracker)))
    args = ms.arg_info.ArgInfo.from_prim_func(candidates[0]["main"])
    start = time.perf_counter()
    (future,) = runner.run([ms.runner.RunnerInput(built[0].artifact_path, "cuda", args)])
    outcome = future.result()
    assert time.perf_counter() - start < 60
    assert outcome.run_secs is None
    assert "ffi.Module.load_from_bytes.cuda" in outcome.error_msg  # the server has no CUDA
