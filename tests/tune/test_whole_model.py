"""Whole models: every kernel a task, the budget spent by latency share, tuned kernels put back
only when faster; the book's section 4.6 (one kernel of a module that calls externs); resume and
Ctrl-C keep what was measured; kernels of one structure tuned once; records reused by another
model; a time budget that covers the whole run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from build_support import LISTINGS, parse
from model_support import twin_mlp
from text_support import unwrapped

from mlc_jupyter.compilation import build_module
from mlc_jupyter.display.tune import result_text
from mlc_jupyter.errors import TuneError
from mlc_jupyter.models import import_model
from mlc_jupyter.tune import tune
from mlc_jupyter.tune.model_plan import MIN_SHARE
from mlc_jupyter.tune.records import read_database

#: The book's section 4.6 module: linear0 in TensorIR (fixed shapes), the rest from the runtime.
MIXTURE = """
@tvm.script.ir_module
class MyModuleMixture:
    @T.prim_func
    def linear0(X: T.Buffer((1, 784), "float32"),
                W: T.Buffer((128, 784), "float32"),
                B: T.Buffer((128,), "float32"),
                Z: T.Buffer((1, 128), "float32")):
        T.func_attr({"global_symbol": "linear0", "tir.noalias": True})
        Y = T.alloc_buffer((1, 128), "float32")
        for i, j, k in T.grid(1, 128, 784):
            with T.block("Y"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    Y[vi, vj] = T.float32(0)
                Y[vi, vj] = Y[vi, vj] + X[vi, vk] * W[vj, vk]
        for i, j in T.grid(1, 128):
            with T.block("Z"):
                vi, vj = T.axis.remap("SS", [i, j])
                Z[vi, vj] = Y[vi, vj] + B[vj]

    @R.function
    def main(x: R.Tensor((1, 784), "float32"),
             w0: R.Tensor((128, 784), "float32"),
             b0: R.Tensor((128,), "float32"),
             w1: R.Tensor((10, 128), "float32"),
             b1: R.Tensor((10,), "float32")):
        with R.dataflow():
            lv0 = R.call_dps_packed("linear0", (x, w0, b0), R.Tensor((1, 128), dtype="float32"))
            lv1 = R.call_dps_packed("env.relu", (lv0,), R.Tensor((1, 128), dtype="float32"))
            out = R.call_dps_packed("env.linear", (lv1, w1, b1), R.Tensor((1, 10), dtype="float32"))
            R.output(out)
        return out
"""


#: One dense kernel, written under the name given.
_DENSE = """
    @T.prim_func
    def {name}(X: T.Buffer((1, 64), "float32"), W: T.Buffer((64, 64), "float32"),
               Z: T.Buffer((1, 64), "float32")):
        T.func_attr({{"global_symbol": "{name}", "tir.noalias": True}})
        for i, j, k in T.grid(1, 64, 64):
            with T.block("Z"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    Z[vi, vj] = T.float32(0)
                Z[vi, vj] = Z[vi, vj] + X[vi, vk] * W[vj, vk]
"""
#: Two kernels of one structure under two names, as a hand-written module has them.
TWINS = (
    "@tvm.script.ir_module\nclass Twins:"
    + _DENSE.format(name="dense_a")
    + _DENSE.format(name="dense_b")
    + """
    @R.function
    def main(x: R.Tensor((1, 64), "float32"), w0: R.Tensor((64, 64), "float32"),
             w1: R.Tensor((64, 64), "float32")):
        cls = Twins
        with R.dataflow():
            lv0 = R.call_tir(cls.dense_a, (x, w0), R.Tensor((1, 64), dtype="float32"))
            out = R.call_tir(cls.dense_b, (lv0, w1), R.Tensor((1, 64), dtype="float32"))
            R.output(out)
        return out
"""
)


@pytest.fixture(scope="module")
def mlp_run(tmp_path_factory):
    model = twin_mlp()
    imported = import_model(model, torch.randn(1, 256))
    work = tmp_path_factory.mktemp("mlp")
    # 48 trials: both kernels get a slot unless one's share is measured under a sixth
    return model, imported, work, tune(imported, trials=48, per_iter=8, work_dir=work)


def test_every_kernel_is_a_task_tuned_in_order_of_its_share_of_the_latency(mlp_run):
    model, imported, _, result = mlp_run
    assert result.kind == "model" and result.origin is imported
    names = [row.name for row in result.model_tasks]
    assert sorted(names) == sorted(k for k, _ in imported.summary.kernels)
    shares = [row.share for row in result.model_tasks]
    assert shares == sorted(shares, reverse=True) and 0.5 < sum(shares) <= 1.0
    for row in result.model_tasks:
        if row.share < MIN_SHARE:  # too small a part of the model to spend trials on
            assert row.trials == 0 and row.kept == "default"
            continue
        # every other kernel was searched (a tiny kernel's space may hold few distinct candidates)
        assert row.trials > 0 and row.before_s and row.after_s
        assert row.kept == "default" or row.after_s < row.before_s
    assert result.model_tasks[0].trials > 0
    assert result.baseline_latency_s and result.best_latency_s
    # kept against the default as the model runs them: weights from memory, not the caches
    assert "its weights flushed from the caches as the model leaves them" in unwrapped(
        result_text(result)
    )
    x = torch.randn(1, 256, generator=torch.Generator().manual_seed(1))
    out = build_module(result)(x.numpy())
    np.testing.assert_allclose(out, model(x).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_a_compute_bound_models_result_says_how_near_its_default_build_runs_to_the_peak(
    tmp_path, mlp_run
):
    from mlc_jupyter.measure.machine import cached_machine_limits
    from mlc_jupyter.tune.search.threads import target_cores

    # a batch of 256 through a 256x256 layer: dozens of FLOPs a byte, so the peak bounds it
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU()).eval()
    imported = import_model(model, torch.randn(256, 256))
    result = tune(imported, trials=8, per_iter=8, work_dir=tmp_path)
    limits = cached_machine_limits()  # the final timing measured the machine, as %mlc_time does
    assert result.peak_gflops == pytest.approx(limits.peak(target_cores(result.target)))
    default = result.baseline_timing.arithmetic_gflops
    line = next(
        ln for ln in unwrapped(result_text(result)).splitlines() if ln.startswith("  peak ")
    )
    assert f"the default build runs at {default / result.peak_gflops:.0%} of this machine's" in line
    assert f"would run {result.peak_gflops / default:.2f}x faster" in line
    # batch 1 reads each weight once: the memory's bandwidth bounds it, not the peak: no line
    memory_bound = mlp_run[3]
    assert memory_bound.peak_gflops is None and "  peak " not in unwrapped(
        result_text(memory_bound)
    )


def test_running_the_same_tune_again_resumes_every_task(mlp_run):
    _, imported, work, first = mlp_run
    again = tune(imported, trials=48, per_iter=8, work_dir=work)
    assert again.trials_new == 0
    assert [r.trials for r in again.model_tasks] == [r.trials for r in first.model_tasks]


def test_each_kernel_locks_its_own_work_dir_and_the_model_its_own(mlp_run):
    from records_support import holder

    _, imported, work, first = mlp_run
    name = first.model_tasks[0].name
    other = holder(Path(first.task_work_dirs[name]))  # another notebook tunes that kernel
    try:
        again = tune(imported, trials=48, per_iter=8, work_dir=work, wait=False)
    finally:
        other.stdin.close()
        other.wait(60)
    busy = f"is in use by the tuning run of pid {other.pid}, started"
    assert any(note.startswith(f"{name} keeps its default schedule") and busy in note
               for note in again.notes)  # fmt: skip
    rows = {row.name: row for row in again.model_tasks}
    assert rows[name].kept == "default" and again.trials_new == 0  # the others resumed
    other = holder(work)  # the same model tuned in another notebook
    try:
        with pytest.raises(
            TuneError, match=f"{work} is in use by the tuning run of pid {other.pid}"
        ):
            tune(imported, trials=48, per_iter=8, work_dir=work, wait=False)
    finally:
        other.stdin.close()
        other.wait(60)


def test_ctrl_c_in_the_first_task_keeps_its_records_and_the_rest_default(tmp_path, book_mlp):
    imported = book_mlp[1]

    def interrupt(event):
        raise KeyboardInterrupt

    result = tune(imported, trials=32, per_iter=8, work_dir=tmp_path, on_progress=interrupt)
    assert result.interrupted and result.stop_reason == "interrupted"
    first, second = result.model_tasks
    assert first.trials >= 1 and second.trials == 0 and second.kept == "default"
    assert build_module(result).relax


def test_the_book_section_4_6_tunes_linear0_and_puts_it_back(tmp_path):
    import tvm

    @tvm.register_global_func("env.linear", override=True)
    def np_linear(x, w, b, out):
        out.copyfrom(x.numpy() @ w.numpy().T + b.numpy())

    @tvm.register_global_func("env.relu", override=True)
    def np_relu(x, out):
        out.copyfrom(np.maximum(x.numpy(), 0))

    mixture = parse(MIXTURE, "relax")
    result = tune(mixture, func="linear0", trials=16, per_iter=8, work_dir=tmp_path)
    assert [row.name for row in result.model_tasks] == ["linear0"]
    assert result.mod["main"].same_as(mixture["main"])  # only linear0 changed
    rng = np.random.default_rng(0)
    args = [
        rng.random(s, dtype="float32") for s in [(1, 784), (128, 784), (128,), (10, 128), (10,)]
    ]
    expected = np.maximum(args[0] @ args[1].T + args[2], 0) @ args[3].T + args[4]
    np.testing.assert_allclose(build_module(result)(*args), expected, rtol=1e-4, atol=1e-4)


def test_kernels_with_symbolic_shapes_are_named_as_the_reason_nothing_can_be_tuned():
    mixture = parse((LISTINGS / "ch3_mixture.py").read_text(), "relax")
    with pytest.raises(TuneError, match="linear0 has symbolic shapes"):
        tune(mixture, trials=8)


def test_a_kernel_the_model_does_not_have_is_refused_with_its_kernels(book_mlp):
    imported = book_mlp[1]
    with pytest.raises(TuneError, match="no kernel 'linear9' in this model"):
        tune(imported, func="linear9", trials=8)


def test_kernels_of_one_structure_are_tuned_once_and_both_use_the_result(tmp_path):
    twins = parse(TWINS, "relax")
    result = tune(twins, trials=16, per_iter=8, work_dir=tmp_path)
    rows = {row.name: row for row in result.model_tasks}
    assert set(rows) == {"dense_a", "dense_b"}
    tuned, other = sorted(rows.values(), key=lambda r: -r.seconds)
    assert tuned.new > 0 and tuned.seconds > 0 and tuned.shared_with == (other.name,)
    assert other.new == 0 and other.seconds == 0 and other.shared_with == (tuned.name,)
    assert result.trials_new == tuned.new  # measured once, for both
    assert other.kept == tuned.kept and other.after_s == tuned.after_s
    assert result.task_work_dirs["dense_a"] == result.task_work_dirs["dense_b"]
    if tuned.kept == "tuned":
        assert tvm_equal(result.mod["dense_a"], result.mod["dense_b"])
    rng = np.random.default_rng(0)
    x, w0, w1 = (rng.random(s, dtype="float32") for s in [(1, 64), (64, 64), (64, 64)])
    expected = (x @ w0.T) @ w1.T
    np.testing.assert_allclose(build_module(result)(x, w0, w1), expected, rtol=1e-4, atol=1e-4)


def test_a_models_cold_records_stay_apart_from_the_same_kernel_tuned_alone_warm():
    kernel = parse("@tvm.script.ir_module\nclass One:" + _DENSE.format(name="main"))
    alone = tune(kernel, trials=8, per_iter=8)  # its records timed warm, again and again
    warm = len(read_database(Path(alone.work_dir)).get_all_tuning_records())
    twins = parse(TWINS, "relax")
    result = tune(twins, trials=16, per_iter=8)  # a model's on a CPU timed cold
    assert Path(result.task_work_dirs["dense_a"]) != Path(alone.work_dir)
    assert len(read_database(Path(alone.work_dir)).get_all_tuning_records()) == warm


def tvm_equal(a, b):
    from mlc_jupyter.tvm_compat import structural_equal

    strip = [f.without_attr("global_symbol") for f in (a, b)]
    return structural_equal(*strip)


@pytest.mark.long
def test_another_model_with_a_kernel_tuned_before_reuses_its_records(mlp_run):
    work, first = mlp_run[2], mlp_run[3]
    # the first layer of both models: (1, 256) x (256, 256), bias, ReLU
    (shared,) = [row for row in first.model_tasks if row.name.endswith("relu")]
    torch.manual_seed(1)
    narrower = torch.nn.Sequential(
        torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 64), torch.nn.ReLU()
    )
    other = import_model(narrower, torch.randn(1, 256))
    # enough trials that the small second layer gets a slot of its own beside the shared one
    result = tune(other, trials=128, per_iter=8, work_dir=work)
    rows = {row.name: row for row in result.model_tasks}
    same = rows[shared.name]
    # its database is the first model's: every record counted as reused (less the default's
    # seed), and only what its target here lacks is measured
    assert result.task_work_dirs[shared.name] == first.task_work_dirs[shared.name]
    assert same.reused >= shared.trials - 1
    assert same.new <= same.trials - shared.trials + 1
    assert same.trials >= shared.trials
    assert any(row.new > 0 for row in rows.values() if row.name != shared.name)


def test_a_time_budget_covers_the_whole_run_and_says_it_ended_on_time(tmp_path, book_mlp):
    imported = book_mlp[1]
    result = tune(imported, time="45s", work_dir=tmp_path)
    assert result.stop_reason == "time"  # the budget, not the trials, ended it
    assert set(result.phases) == {"plan", "tasks", "final"}
    assert sum(result.phases.values()) == pytest.approx(result.elapsed_s, rel=0.01)
    # the run stops after the candidate in flight at the deadline, so it may pass it by that
    # much; a run that ignored the deadline overran by whole rounds
    assert result.elapsed_s <= result.time_budget_s * 1.1
    for row in result.model_tasks:
        assert row.kept == "default" or row.seconds > 0
    assert build_module(result).relax


def test_a_kernel_whose_search_fails_keeps_its_default_and_the_others_are_still_tuned(
    tmp_path, monkeypatch
):
    # TVM's search can fail inside C++ on one kernel (a check in a parallel_for of the
    # evolutionary search, seen on an encoder layer); the failure is injected at the task
    # boundary, and everything after it (the other kernel's search, the build) is real
    import mlc_jupyter.tune.model_tasks as model_tasks

    real = model_tasks._tune_task
    failed = []

    def first_fails(task, *args, **kwargs):
        if not failed:
            failed.append(task.name)
            raise TuneError("tuning failed: parallel_for_dynamic error with Check failed")
        return real(task, *args, **kwargs)

    monkeypatch.setattr(model_tasks, "_tune_task", first_fails)
    model = twin_mlp()
    x = torch.randn(1, 256)
    # 64 trials: the second kernel gets a slot unless its share is measured under an eighth
    result = tune(import_model(model, x), trials=64, work_dir=tmp_path)
    rows = {row.name: row for row in result.model_tasks}
    assert rows[failed[0]].kept == "default" and rows[failed[0]].new == 0
    assert any(row.new > 0 for row in result.model_tasks)  # the next kernel was searched
    assert any(failed[0] in note and "parallel_for_dynamic" in note for note in result.notes)
    out = build_module(result)(x.numpy())
    np.testing.assert_allclose(out, model(x).detach().numpy(), rtol=1e-4, atol=1e-4)
