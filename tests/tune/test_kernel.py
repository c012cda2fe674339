"""The tuning service: progress, resume, interrupt, result quality, errors (real MetaSchedule)."""

from __future__ import annotations

import numpy as np
import pytest
from build_support import SCALE_BY_N, matmul
from text_support import unwrapped

from mlc_jupyter.errors import NoGPUError, RemoteError, TuneError


@pytest.fixture(scope="module")
def first_run(tmp_path_factory):
    from mlc_jupyter.tune import tune

    work = tmp_path_factory.mktemp("tune128")
    events = []
    result = tune(matmul(128), trials=24, per_iter=8, work_dir=work, seed=0,
                  on_progress=events.append)  # fmt: skip
    return result, events, work


def test_progress_events_arrive_with_trials_and_a_falling_best_latency(first_run):
    _result, events, _ = first_run
    assert events, "no progress event arrived"
    assert events[-1].trials_done == events[-1].trials_total == 24
    done = [e.trials_done for e in events]
    assert done == sorted(done)
    assert events[-1].best_latency_s is not None and events[-1].best_gflops > 0
    curve = events[-1].curve
    assert [lat for _, lat in curve] == sorted((lat for _, lat in curve), reverse=True)
    assert events[-1].log_path.endswith("tune.log")


def test_tuned_module_beats_the_untuned_one_and_matches_numpy(first_run):
    import tvm

    result, _, _ = first_run
    assert result.speedup == pytest.approx(result.baseline_latency_s / result.best_latency_s)
    assert result.n_records == 24 and not result.interrupted
    assert result.trace is not None and "main" in str(result.workload)
    rt = tvm.compile(result.mod, target=result.target)
    rng = np.random.default_rng(1)
    a = rng.random((128, 128), dtype="float32")
    b = rng.random((128, 128), dtype="float32")
    c = tvm.runtime.tensor(np.zeros((128, 128), "float32"))
    rt["main"](tvm.runtime.tensor(a), tvm.runtime.tensor(b), c)
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-4)


def test_close_contenders_are_timed_in_turns_and_the_result_is_the_fastest(first_run):
    from mlc_jupyter.tune import top_records
    from mlc_jupyter.tune.timing import in_turns, kernel_sampler

    result, _, work = first_run
    order: list[int] = []

    def logged(index, sampler):
        return lambda: (order.append(index), sampler())[1]

    untuned = kernel_sampler(result.workload, result.target)
    tuned = kernel_sampler(result.mod, result.target)
    medians = in_turns([logged(0, untuned), logged(1, tuned)], rounds=3)
    assert order == [0, 1, 0, 1, 0, 1]  # one sample of each per round, not one after the other
    assert len(medians) == 2 and all(m > 0 for m in medians)
    # the returned schedule is one of the fastest records, re-timed rather than taken on trust
    best_traces = [str(r.trace) for r in top_records(work, 5)]
    assert str(result.trace) in best_traces


def test_top_records_are_fastest_first_and_replay_on_their_workload(first_run):
    from mlc_jupyter.tune import top_records

    _, _, work = first_run
    best = top_records(work, 3)
    assert len(best) == 3
    assert best[0].latency_s <= best[1].latency_s <= best[2].latency_s
    from mlc_jupyter.tvm_compat import Schedule

    sch = Schedule(best[0].workload_mod)
    best[0].trace.apply_to_schedule(sch, remove_postproc=False)


def test_a_second_run_resumes_without_measuring_again(first_run):
    from mlc_jupyter.tune import tune

    _first, _, work = first_run
    events = []
    again = tune(matmul(128), trials=32, per_iter=8, work_dir=work, seed=0,
                 on_progress=events.append)  # fmt: skip
    assert again.resumed_from == 24
    # the search may propose a schedule measured in the first run: it is reused, not re-timed
    assert 1 <= again.trials_new <= 8 and again.n_records == 24 + again.trials_new
    assert events[0].trials_done > 24 and events[-1].trials_done == 32  # the curve continues
    same = tune(matmul(128), trials=again.n_records, work_dir=work)
    assert same.trials_new == 0 and same.n_records == again.n_records
    assert same.best_latency_s is not None


def test_an_interrupt_keeps_the_finished_records_and_returns_the_best_so_far(tmp_path):
    from mlc_jupyter.tune import top_records, tune

    def stop(event):
        if event.trials_done >= 8:
            raise KeyboardInterrupt

    result = tune(matmul(64), trials=64, per_iter=8, work_dir=tmp_path, on_progress=stop)
    assert result.interrupted
    assert 8 <= result.n_records < 64
    assert len(top_records(tmp_path, 100)) == result.n_records
    assert result.best_latency_s is not None and result.speedup is not None


def test_a_real_ctrl_c_stops_the_run_and_restores_the_handler(tmp_path):
    import os
    import signal

    from mlc_jupyter.tune import tune

    before = signal.getsignal(signal.SIGINT)

    def ctrl_c(event):
        if event.trials_done >= 8:
            os.kill(os.getpid(), signal.SIGINT)

    result = tune(matmul(64), trials=64, per_iter=8, work_dir=tmp_path, on_progress=ctrl_c)
    assert result.interrupted and 8 <= result.n_records < 64
    assert signal.getsignal(signal.SIGINT) is before


def test_a_gpu_target_without_a_gpu_is_refused_at_once():
    import tvm

    if tvm.cuda(0).exist:
        pytest.skip("this machine has a GPU")
    from mlc_jupyter.tune import tune

    with pytest.raises(NoGPUError, match="needs a CUDA GPU, and this machine has none"):
        tune(matmul(64), "cuda", trials=8)


def test_bad_requests_get_short_messages():
    from mlc_jupyter.tune import top_records, tune

    with pytest.raises(RemoteError, match="--rpc expects HOST:PORT:KEY"):
        tune(matmul(64), rpc="localhost:9190")
    with pytest.raises(TuneError, match="--trials must be at least 1"):
        tune(matmul(64), trials=0)
    with pytest.raises(TuneError, match="--time expects a duration like 10m"):
        tune(matmul(64), time="ten minutes")
    with pytest.raises(TuneError, match="unknown search space 'blis'"):
        tune(matmul(64), trials=4, space="blis")
    with pytest.raises(TuneError, match="cannot tune a str"):
        tune("not a module", trials=4)
    with pytest.raises(TuneError, match="holds no tuning database"):
        top_records("/nonexistent/work/dir", 3)


def test_candidates_are_timed_on_as_many_threads_as_the_target_has_cores():
    import tvm

    from mlc_jupyter.tune.options import tuning_target
    from mlc_jupyter.tune.search.threads import on_measure_thread, target_cores

    # TVM's own default is half the logical CPUs (one thread on a 2-core machine)
    target = tuning_target("llvm -num-cores=2")
    assert on_measure_thread(target_cores(target), tvm.runtime.num_threads) == 2
    assert (
        on_measure_thread(target_cores(tuning_target("llvm -num-cores=1")), tvm.runtime.num_threads)
        == 1
    )
    assert target_cores(tuning_target(None)) >= 1


def test_each_search_space_gets_its_own_default_database():
    from mlc_jupyter.tune.options import tuning_target, work_dir_for
    from mlc_jupyter.tune.spaces.choice import choose_spaces
    from mlc_jupyter.tune.tasks import collect_tasks

    def tile_j(sch):
        return sch

    def tile_k(sch):
        return sch

    target = tuning_target(None)
    tasks = collect_tasks(matmul(64), target)

    def work_dir(space):
        return work_dir_for(
            tasks.workload, target, "tir", choose_spaces(tasks.mods, target, space).key
        )

    # MetaSchedule's space keeps the key it always had, so earlier caches stay valid
    assert work_dir("metaschedule") == work_dir_for(tasks.workload, target, "tir")
    assert work_dir("default") == work_dir("matmul") != work_dir("metaschedule")
    assert work_dir(tile_j) not in (work_dir("default"), work_dir(tile_k))


def test_matmuls_search_the_matmul_space_and_other_kernels_metaschedules(first_run, tmp_path):
    from tvm import te

    from mlc_jupyter.tune import tune

    assert first_run[0].spaces == {"main": "matmul"}
    a = te.placeholder((64, 64), name="A")
    b = te.compute((64, 64), lambda i, j: a[i, j] * 2.0, name="B")
    scaled = tune(te.create_prim_func([a, b]), trials=8, per_iter=8, work_dir=tmp_path)
    assert scaled.spaces == {"main": "metaschedule"}
    with pytest.raises(TuneError, match="--space matmul needs a CPU matmul-like kernel"):
        tune(te.create_prim_func([a, b]), trials=8, space="matmul", work_dir=tmp_path)


def test_the_reported_latency_is_measured_as_mlc_time_measures_it(first_run):
    from mlc_jupyter.measure import time_module

    result = first_run[0]
    # a measurement of its own after the choice, not the figure that chose the winner
    assert result.timing is not None and result.best_latency_s == result.timing.median_s
    assert result.timing.runs == 5 and result.timing.gflops == pytest.approx(result.best_gflops)
    right_after = time_module(result.mod, result.target)  # what %mlc_time result.mod runs
    assert right_after.target == result.timing.target
    assert right_after.flops == result.timing.flops and right_after.runs == result.timing.runs


def test_the_result_says_how_far_it_is_from_this_machines_peak(first_run):
    from mlc_jupyter.display.tune import result_bundle, result_text
    from mlc_jupyter.measure.machine import cached_machine_limits

    result = first_run[0]
    limits = cached_machine_limits()
    assert result.peak_gflops == limits.peak(2 if result.target.attrs["num-cores"] >= 2 else 1)
    assert result.peak_fraction == pytest.approx(result.best_gflops / result.peak_gflops)
    assert f"{result.peak_fraction:.0%} of peak" in unwrapped(result_text(result))
    assert "roofline: fp32 peak" in unwrapped(result_text(result))
    assert 'aria-label="roofline chart"' in result_bundle(result)["text/html"]


def test_a_gpu_kernels_peak_stays_the_gpus_however_far_it_outruns_this_cpu():
    from mlc_jupyter.compilation import resolve_target
    from mlc_jupyter.measure.machine import machine_limits
    from mlc_jupyter.tune.kernel import checked_peak_gflops

    cpu = machine_limits()  # this CPU's, measured or cached
    cuda = resolve_target("cuda")  # no GPU needed: only its kind is read
    # a tuned CUDA kernel far above this CPU's peak: its peak is the GPU's, left as it is
    assert checked_peak_gflops(60000.0, 50000.0, cuda, "the tuned kernel") == 60000.0
    assert machine_limits() == cpu  # and this CPU was not measured again for it
    assert checked_peak_gflops(None, 50000.0, cuda, "the tuned kernel") is None


def test_a_time_budget_ends_the_run_after_the_round_in_flight(tmp_path):
    from mlc_jupyter.tune import tune

    events = []
    result = tune(matmul(64), time="1s", per_iter=8, work_dir=tmp_path, on_progress=events.append)
    assert result.stop_reason == "time" and not result.interrupted
    assert result.time_budget_s == 1.0 and result.n_records >= 1
    assert events[-1].trials_total is None and events[-1].time_budget_s == 1.0


def test_a_time_budget_cuts_the_round_in_flight_instead_of_measuring_all_of_it(tmp_path):
    from mlc_jupyter.tune import tune

    result = tune(matmul(64), time="1s", per_iter=64, work_dir=tmp_path)
    # the rest of the round is skipped, not saved: a resume measures it
    assert result.stop_reason == "time" and 1 <= result.n_records < 64


def test_a_space_searched_through_before_the_budget_says_so(tmp_path):
    from foreign_support import ADD_ONE  # 16 additions: a handful of distinct schedules

    from mlc_jupyter import parse_tir
    from mlc_jupyter.display.tune import result_text
    from mlc_jupyter.tune import tune

    result = tune(parse_tir(ADD_ONE), "llvm", trials=64, work_dir=tmp_path)
    # MetaSchedule stopped by itself: not "all trials measured", which would be untrue
    assert result.stop_reason == "searched" and 1 <= result.n_records < 64
    assert "every design space searched through, budget left" in unwrapped(result_text(result))


def test_a_kernel_with_a_scalar_parameter_is_refused_before_the_search(tmp_path):
    from mlc_jupyter import parse_tir
    from mlc_jupyter.tune import tune

    with pytest.raises(TuneError) as caught:
        tune(parse_tir(SCALE_BY_N), "llvm", trials=4, work_dir=tmp_path)
    assert str(caught.value).startswith(
        "cannot tune a kernel with a scalar parameter (n: int32) without its value: "
    )
    assert caught.value.hint.startswith(
        "give the value to tune for: %mlc_tune ... --bind n=VALUE, or tune(..., bind={'n': VALUE})"
    )


def test_a_kernel_with_a_scalar_bound_to_a_value_is_tuned_for_that_value(tmp_path):
    import numpy as np

    from mlc_jupyter import parse_tir
    from mlc_jupyter.compilation import build_module
    from mlc_jupyter.tune import tune

    result = tune(parse_tir(SCALE_BY_N), "llvm", trials=8, per_iter=8, work_dir=tmp_path, seed=0,
                  bind={"n": 3})  # fmt: skip
    assert result.n_records == 8 and result.notes == (
        "tuned for n = 3; the tuned kernel has this value written in and no longer takes n",
    )
    a = np.arange(64, dtype="float32")
    b = np.zeros(64, dtype="float32")
    build_module(result.mod, "llvm")(a, b)
    np.testing.assert_allclose(b, 3 * a)


#: A 16x16 ``alpha * A + B``: every MetaSchedule candidate of it is parallel, so none beats it.
AXPY = (
    "@T.prim_func\n"
    "def axpy(A: T.Buffer((16, 16), 'float32'), B: T.Buffer((16, 16), 'float32'),\n"
    "         C: T.Buffer((16, 16), 'float32'), alpha: T.float32):\n"
    "    for i, j in T.grid(16, 16):\n"
    "        with T.block('C'):\n"
    "            vi, vj = T.axis.remap('SS', [i, j])\n"
    "            C[vi, vj] = alpha * A[vi, vj] + B[vi, vj]\n"
)
#: ``C = alpha * (A @ B)``, 64x64: any candidate beats the loops as written.
SCALED_MATMUL = (
    "@T.prim_func\n"
    "def scaled_mm(A: T.Buffer((64, 64), 'float32'), B: T.Buffer((64, 64), 'float32'),\n"
    "              C: T.Buffer((64, 64), 'float32'), alpha: T.float32):\n"
    "    for i, j, k in T.grid(64, 64, 64):\n"
    "        with T.block('C'):\n"
    "            vi, vj, vk = T.axis.remap('SSR', [i, j, k])\n"
    "            with T.init():\n"
    "                C[vi, vj] = T.float32(0)\n"
    "            C[vi, vj] = C[vi, vj] + alpha * A[vi, vk] * B[vk, vj]\n"
)


def test_a_float_scalar_bound_to_a_value_stays_a_parameter_of_the_tuned_kernel(tmp_path):
    import numpy as np

    from mlc_jupyter import parse_tir
    from mlc_jupyter.compilation import build_module
    from mlc_jupyter.tune import tune

    result = tune(parse_tir(SCALED_MATMUL), "llvm", trials=8, per_iter=8, work_dir=tmp_path, seed=0,
                  bind={"alpha": 2})  # fmt: skip
    assert result.kept == "tuned" and result.notes == (
        "tuned for alpha = 2.0; the tuned kernel still takes alpha (the schedule found replays "
        "on the kernel as written)",
    )
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((64, 64)).astype("float32") for _ in range(2))
    c = np.zeros((64, 64), dtype="float32")
    build_module(result.mod, "llvm")(a, b, c, 0.5)
    np.testing.assert_allclose(c, 0.5 * (a @ b), rtol=1e-4, atol=1e-4)


def test_a_kernel_no_candidate_beats_is_kept_as_written(tmp_path):
    import numpy as np

    from mlc_jupyter import parse_tir
    from mlc_jupyter.compilation import build_module
    from mlc_jupyter.display.tune import result_text
    from mlc_jupyter.tune import tune
    from mlc_jupyter.tvm_compat import structural_equal

    result = tune(parse_tir(AXPY), "llvm", trials=8, per_iter=8, work_dir=tmp_path, seed=0,
                  bind={"alpha": 2})  # fmt: skip
    assert result.kept == "as written" and result.speedup == 1.0
    assert result.best_candidate_s > result.best_latency_s  # timed in turns, then kept
    assert result.trace is not None  # the fastest candidate's schedule, to look at
    assert result.notes == (
        "tuned for alpha = 2.0; no candidate beat the kernel as written, which is kept and still "
        "takes alpha",
    )
    written = result.mod["main"]
    assert structural_equal(written.body, parse_tir(AXPY).body, map_free_vars=True)
    assert "kept     the kernel as written" in unwrapped(result_text(result))
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((16, 16)).astype("float32") for _ in range(2))
    c = np.zeros((16, 16), dtype="float32")
    build_module(result.mod, "llvm")(a, b, c, 0.5)
    np.testing.assert_allclose(c, 0.5 * a + b, rtol=1e-6)


def test_sizes_given_as_scalar_parameters_are_tuned_for_the_sizes_bound(tmp_path):
    from mlc_jupyter import parse_tir
    from mlc_jupyter.tune import tune
    from mlc_jupyter.tvm_compat import param_buffers

    copy = parse_tir(
        "@T.prim_func\n"
        "def copy2(a: T.handle, b: T.handle, m: T.int32, n: T.int32):\n"
        "    A = T.match_buffer(a, (m, n), 'float32')\n"
        "    B = T.match_buffer(b, (m, n), 'float32')\n"
        "    for i, j in T.grid(m, n):\n"
        "        with T.block('B'):\n"
        "            vi, vj = T.axis.remap('SS', [i, j])\n"
        "            B[vi, vj] = A[vi, vj] * T.float32(2)\n"
    )
    with pytest.raises(TuneError) as caught:
        tune(copy, "llvm", trials=8, work_dir=tmp_path)
    assert caught.value.hint == (
        "give the value to tune for: %mlc_tune ... --bind m=VALUE --bind n=VALUE, or "
        "tune(..., bind={'m': VALUE, 'n': VALUE})"
    )
    result = tune(copy, "llvm", trials=8, per_iter=8, work_dir=tmp_path, bind={"m": 16, "n": 32})
    assert result.n_records == 8 and result.notes == (
        "tuned for m = 16, n = 32; the tuned kernel has these values written in and no longer "
        "takes m, n",
    )
    assert [tuple(int(d) for d in b.shape) for b in param_buffers(result.mod["main"])] == [
        (16, 32),
        (16, 32),
    ]
