"""The CUDA search on the host: a random first round, all host cores, full rounds, the compiler.

Nothing here needs a GPU: the target is an ``sm_90a`` CUDA target with its limits spelled out
(what ``%mlc_tune`` completes from the device), and candidates are compiled to CUDA source.
"""

from __future__ import annotations

import os

import pytest

pytest.importorskip("tvm")

from mlc_jupyter.tvm_compat import metaschedule, tvm

H100 = {
    "kind": "cuda", "arch": "sm_90a", "max_threads_per_block": 1024, "max_num_threads": 1024,
    "max_shared_memory_per_block": 49152, "thread_warp_size": 32, "registers_per_block": 65536,
}  # fmt: skip


def cuda_target(**attrs):
    return tvm().target.Target({**H100, **attrs}, host="llvm")


def matmul(n: int, dtype: str = "float32"):
    from tvm import te

    a = te.placeholder((n, n), name="A", dtype=dtype)
    b = te.placeholder((n, n), name="B", dtype=dtype)
    k = te.reduce_axis((0, n), name="k")
    c = te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    return tvm().IRModule({"main": te.create_prim_func([a, b, c])})


def context(mod, target, strategy, space=None):
    """A tuning task as ``%mlc_tune`` makes it: the default space, every host core."""
    from mlc_jupyter.compilation.intrinsics import load_tensor_intrinsics
    from mlc_jupyter.tune.search.threads import host_cores
    from mlc_jupyter.tune.spaces.choice import choose_spaces

    ms = metaschedule()
    if space is None:
        chosen = choose_spaces([mod], target, "default")
        load_tensor_intrinsics("cuda", chosen.tensor_intrinsics)
        (space,) = chosen.generators
    return ms.TuneContext(
        mod=mod, target=target, space_generator=space, search_strategy=strategy,
        task_name="main", rand_state=0, num_threads=host_cores(target),
    )  # fmt: skip


def cuda_source(candidate, target) -> str:
    """The CUDA C++ of a candidate, compiled as the tuner's builder compiles it (no device)."""
    from mlc_jupyter.tune.search.candidate_builder import build_candidate

    rt_mod = build_candidate(candidate.sch.mod, target)
    rt_mod = getattr(rt_mod, "mod", rt_mod)
    return "\n".join(m.inspect_source() for m in rt_mod.imports)


def test_the_first_cuda_rounds_are_a_small_one_then_a_full_batch_sampled_without_evolving():
    from mlc_jupyter.tune.search.strategy import FIRST_ROUND, RandomFirstRound

    ms = metaschedule()
    target = cuda_target()
    strategy = RandomFirstRound()
    ctx = context(matmul(256), target, strategy)
    ctx.pre_tuning(
        max_trials=256, num_trials_per_iter=32, design_spaces=ctx.generate_design_space(),
        database=ms.database.MemoryDatabase(), cost_model=ms.cost_model.XGBModel(),
    )  # fmt: skip
    assert strategy.plan == [("random", FIRST_ROUND), ("random", 32 - FIRST_ROUND),
                             ("evolutionary", 256 - 32)]  # fmt: skip
    for size in (FIRST_ROUND, 32 - FIRST_ROUND):
        assert strategy.phase == "random"
        with ms.Profiler() as profiler:
            candidates = ctx.search_strategy.generate_measure_candidates()
        # handed to the builder and runner without sampling or evolving a population for a
        # cost model that has seen nothing
        assert len(candidates) == size
        assert not [scope for scope in profiler.get() if scope.startswith("EvoSearch")]
        results = [ms.runner.RunnerResult([1e-3], None) for _ in candidates]
        ctx.search_strategy.notify_runner_results(candidates, results)
    assert "__global__" in cuda_source(candidates[0], target)
    assert strategy.phase == "evolutionary"  # MetaSchedule's own search from the next round on


def test_a_task_with_records_skips_the_random_rounds():
    from mlc_jupyter.tune.search.strategy import RandomFirstRound, plan_rounds

    ms = metaschedule()
    target = cuda_target()
    mod = matmul(128)
    first = context(mod, target, ms.search_strategy.ReplayTrace())
    first.pre_tuning(
        max_trials=1, num_trials_per_iter=1, design_spaces=first.generate_design_space()
    )
    (candidate,) = first.search_strategy.generate_measure_candidates()
    database = ms.database.MemoryDatabase()
    database.commit_tuning_record(
        ms.database.TuningRecord(
            candidate.sch.trace, database.commit_workload(mod), [1e-3], target,
            candidate.args_info,
        )
    )  # fmt: skip
    strategy = RandomFirstRound()
    ctx = context(mod, target, strategy)
    ctx.pre_tuning(
        max_trials=64, num_trials_per_iter=16, design_spaces=ctx.generate_design_space(),
        database=database, cost_model=ms.cost_model.XGBModel(),
    )  # fmt: skip
    # a resumed run with the same seed would sample the first run's candidates again
    assert strategy.plan == [("evolutionary", 64)] and strategy.phase == "evolutionary"
    # a budget smaller than one batch is all random; a first round never exceeds the budget
    assert plan_rounds(20, 64, False) == [("random", 8), ("random", 12)]
    assert plan_rounds(5, 64, False) == [("random", 5)]
    assert plan_rounds(100, 8, False) == [("random", 8), ("evolutionary", 92)]


def test_a_cuda_search_uses_every_host_core_and_full_rounds():
    from mlc_jupyter.tune.kernel import MAX_PER_ITER, default_per_iter
    from mlc_jupyter.tune.search.threads import host_cores

    assert host_cores(cuda_target()) == (os.cpu_count() or 1)  # a GPU's num-cores is no limit
    assert host_cores(tvm().target.Target({"kind": "llvm", "num-cores": 1})) == 1
    # a GPU round's search costs the same whatever its size: rounds stay full
    assert default_per_iter(64, gpu=True) == MAX_PER_ITER
    assert default_per_iter(10, gpu=True) == 10
    assert default_per_iter(64) == 16  # a CPU spreads a small budget over four rounds


def test_candidates_compile_with_nvrtc_when_cuda_bindings_is_installed_else_nvcc(monkeypatch):
    import importlib.util
    import shutil

    from mlc_jupyter.tvm_compat import CUDA_COMPILE_MODE_VAR, cuda_compiler

    monkeypatch.setenv(CUDA_COMPILE_MODE_VAR, "nvrtc")
    assert cuda_compiler() == "nvrtc"  # the user's choice is kept
    monkeypatch.delenv(CUDA_COMPILE_MODE_VAR)
    has_bindings = importlib.util.find_spec("cuda") is not None and (
        importlib.util.find_spec("cuda.bindings") is not None
    )
    expected = "nvcc" if shutil.which("nvcc") and not has_bindings else "nvrtc"
    assert cuda_compiler() == expected


def test_fp16_cuda_kernels_search_the_tensor_core_space():
    from mlc_jupyter.tune.spaces.choice import TENSOR_CORE_SPACE_KEY, choose_spaces

    turing = cuda_target(arch="sm_75")  # MetaSchedule picks tensor-core rules from sm_80 only
    chosen = choose_spaces([matmul(256, "float16")], turing, "default")
    assert chosen.names == ["tensor-core"] and chosen.key == TENSOR_CORE_SPACE_KEY
    assert chosen.tensor_intrinsics
    fp32 = choose_spaces([matmul(256)], turing, "default")
    # MetaSchedule's CUDA space without its tensor-core rules, which fp32 cannot use: no
    # seconds of registering tensor intrinsics before the first candidate
    assert fp32.names == ["metaschedule"] and fp32.key == "" and not fp32.tensor_intrinsics
    pascal = cuda_target(arch="sm_61")
    assert choose_spaces([matmul(256, "float16")], pascal, "default").names == ["metaschedule"]
    assert choose_spaces([matmul(256, "float16")], turing, "metaschedule").names == ["metaschedule"]


def test_fp16_tensor_core_candidates_build_for_sm_90a():
    ms = metaschedule()
    target = cuda_target()
    mod = matmul(256, "float16")
    ctx = context(mod, target, ms.search_strategy.ReplayTrace())
    spaces = ctx.generate_design_space()
    assert spaces and all("tensorize" in str(s.trace) for s in spaces)
    ctx.pre_tuning(max_trials=2, num_trials_per_iter=2, design_spaces=spaces)
    candidates = ctx.search_strategy.generate_measure_candidates()
    assert candidates
    source = cuda_source(candidates[0], target)
    assert "wmma::mma_sync" in source
    from mlc_jupyter.compilation.device_code import find_nvcc

    if find_nvcc() is None:
        return  # CUDA source is as far as a machine without the toolkit goes
    from mlc_jupyter.tvm_compat import nvcc_compile

    assert nvcc_compile(source, target, "cubin")  # GPU code for the H100's sm_90a


def test_a_tune_hands_its_first_small_round_to_the_builder_before_any_other(tmp_path):
    """The real driver on this CPU: the first batch goes out as a round of FIRST_ROUND
    candidates, then the rest of the batch (the task log says what went to the builder)."""
    import re
    from pathlib import Path

    from build_support import matmul as te_matmul

    from mlc_jupyter.tune import tune
    from mlc_jupyter.tune.search.strategy import FIRST_ROUND

    result = tune(te_matmul(64), trials=16, per_iter=16, work_dir=tmp_path, seed=0,
                  baseline=False)  # fmt: skip
    sent = [int(n) for n in re.findall(r"Sending (\d+) sample", Path(result.log_path).read_text())]
    assert sent == [FIRST_ROUND, 16 - FIRST_ROUND]
    assert result.compiler == ""  # a CPU tune compiles with LLVM alone
