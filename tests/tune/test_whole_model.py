"""Whole models: every kernel a task, the budget spent by latency share, tuned kernels put back
only when faster; the book's section 4.6 (one kernel of a module that calls externs); resume and
Ctrl-C keep what was measured."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from build_support import LISTINGS, parse
from model_support import mlp

from mlc_jupyter.compilation import build_module
from mlc_jupyter.errors import TuneError
from mlc_jupyter.models import import_model
from mlc_jupyter.tune import tune

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


@pytest.fixture(scope="module")
def mlp_run(tmp_path_factory):
    model = mlp()
    imported = import_model(model, torch.randn(1, 784))
    work = tmp_path_factory.mktemp("mlp")
    return model, imported, work, tune(imported, trials=24, per_iter=8, work_dir=work)


def test_every_kernel_is_a_task_tuned_in_order_of_its_share_of_the_latency(mlp_run):
    model, imported, _, result = mlp_run
    assert result.kind == "model" and result.origin is imported
    names = [row.name for row in result.model_tasks]
    assert sorted(names) == sorted(k for k, _ in imported.summary.kernels)
    shares = [row.share for row in result.model_tasks]
    assert shares == sorted(shares, reverse=True) and 0.5 < sum(shares) <= 1.0
    for row in result.model_tasks:
        # every kernel was searched (a tiny kernel's space may hold fewer distinct candidates)
        assert row.trials > 0 and row.before_s and row.after_s
        assert row.kept == "default" or row.after_s < row.before_s
    assert result.baseline_latency_s and result.best_latency_s
    x = torch.randn(1, 784)
    out = build_module(result)(x.numpy())
    np.testing.assert_allclose(out, model(x).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_running_the_same_tune_again_resumes_every_task(mlp_run):
    _, imported, work, first = mlp_run
    again = tune(imported, trials=24, per_iter=8, work_dir=work)
    assert again.trials_new == 0
    assert [r.trials for r in again.model_tasks] == [r.trials for r in first.model_tasks]


def test_ctrl_c_in_the_first_task_keeps_its_records_and_the_rest_default(tmp_path):
    imported = import_model(mlp(), torch.randn(1, 784))

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


def test_a_kernel_the_model_does_not_have_is_refused_with_its_kernels():
    imported = import_model(mlp(), torch.randn(1, 784))
    with pytest.raises(TuneError, match="no kernel 'linear9' in this model"):
        tune(imported, func="linear9", trials=8)


def test_a_whole_model_budget_of_trials_reaches_the_largest_kernels_first():
    from mlc_jupyter.tune.budget import Budget
    from mlc_jupyter.tune.whole_model import planned_tasks

    assert planned_tasks(Budget(16, None, False), [0.75, 0.25]) == 1
    assert planned_tasks(Budget(64, None, False), [0.5, 0.3, 0.2]) == 3
    assert planned_tasks(Budget(None, 60.0, False), [0.75, 0.25]) == 2
