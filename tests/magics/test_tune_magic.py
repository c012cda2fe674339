"""``%mlc_tune`` in a real IPython shell, and a Relax MLP tuned end to end."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from build_support import matmul
from IPython.core.error import UsageError
from text_support import unwrapped

from mlc_jupyter.tune.report import TuneResult


def test_mlc_tune_binds_a_result_and_prints_progress_and_a_summary(shell, tmp_path, capsys):
    shell.user_ns["mm"] = matmul(64)
    shell.run_line_magic("mlc_tune", f"mm --trials 8 --per-iter 8 --work-dir {tmp_path}")
    out = capsys.readouterr().out
    result = shell.user_ns["mm_tuned"]
    assert isinstance(result, TuneResult) and result.n_records == 8
    assert f"tuning in {tmp_path}" in out
    assert "[mm] 8/8 trials" in out  # the header names the kernel as the user did, not [main]
    assert "speed-up" in out and "bound mm_tuned" in out
    assert "Sending" not in out and "TaskScheduler" not in out  # MetaSchedule logs go to a file
    assert "Sending" in (tmp_path / "logs" / "tune.log").read_text()


def test_mlc_tune_as_and_quiet_bind_silently_and_resume(shell, tmp_path, capsys):
    shell.user_ns["mm"] = matmul(64)
    shell.run_line_magic("mlc_tune", f"mm --trials 8 --per-iter 8 --work-dir {tmp_path} --quiet")
    shell.run_line_magic("mlc_tune", f"mm --trials 8 --work-dir {tmp_path} --as again --quiet")
    assert capsys.readouterr().out == ""
    assert shell.user_ns["again"].trials_new == 0
    assert shell.user_ns["again"].n_records == 8


def test_mlc_tune_time_budget_stops_the_run_and_says_why(shell, tmp_path, capsys):
    shell.user_ns["mm"] = matmul(64)
    shell.run_line_magic("mlc_tune", f"mm --time 1s --per-iter 8 --work-dir {tmp_path}")
    out = capsys.readouterr().out
    result = shell.user_ns["mm_tuned"]
    assert result.stop_reason == "time" and "time budget used" in out
    assert "of 1s" in out and "of peak" in out  # progress shows the budget and % of peak


def test_mlc_tune_waits_for_the_run_holding_its_work_dir_or_fails_at_once(shell, tmp_path, capsys):
    from records_support import wait_locked, writer

    from mlc_jupyter.errors import TuneError

    work, release = tmp_path / "work", tmp_path / "release"
    proc = writer(work, 1, "a", "--until", str(release))  # another notebook's run, in this dir
    wait_locked(proc)
    shell.user_ns["mm"] = matmul(16)
    line = f"mm --trials 4 --per-iter 4 --work-dir {work}"
    with pytest.raises(TuneError, match=rf"is in use by the tuning run of pid {proc.pid}, started"):
        shell.run_line_magic("mlc_tune", f"{line} --no-wait")
    threading.Timer(5.0, release.touch).start()  # the other run ends while this one waits
    shell.run_line_magic("mlc_tune", line)
    out = capsys.readouterr().out
    assert f"waiting for the tuning run of pid {proc.pid}, started" in out
    assert proc.wait(60) == 0
    assert shell.user_ns["mm_tuned"].n_records == 4  # its own kernel's, not the other run's


def test_mlc_tune_refuses_a_bad_time_and_an_unknown_space_in_one_line(shell):
    from mlc_jupyter.errors import TuneError

    shell.user_ns["mm"] = matmul(64)
    with pytest.raises(TuneError, match="--time expects a duration like 10m"):
        shell.run_line_magic("mlc_tune", "mm --time soon")
    with pytest.raises(UsageError, match="--space takes default, metaschedule, matmul, conv"):
        shell.run_line_magic("mlc_tune", "mm --space nothing_here")


def test_mlc_tune_bind_tunes_a_kernel_with_a_scalar_for_that_value(shell, tmp_path, capsys):
    from build_support import SCALE_BY_N

    from mlc_jupyter import parse_tir

    shell.user_ns["scale"] = parse_tir(SCALE_BY_N)
    shell.user_ns["factor"] = 3
    shell.run_line_magic(
        "mlc_tune", f"scale --bind n=factor --trials 8 --per-iter 8 --work-dir {tmp_path}"
    )
    out = capsys.readouterr().out
    assert shell.user_ns["scale_tuned"].n_records == 8
    assert "note: tuned for n = 3; the tuned kernel has this value written in" in unwrapped(out)


def test_mlc_tune_bind_without_a_value_or_with_an_unknown_name_is_one_line(shell):
    from build_support import SCALE_BY_N

    from mlc_jupyter import parse_tir

    shell.user_ns["scale"] = parse_tir(SCALE_BY_N)
    with pytest.raises(UsageError, match=r"--bind takes NAME=VALUE \(a scalar parameter and its "):
        shell.run_line_magic("mlc_tune", "scale --bind n --trials 8")
    with pytest.raises(UsageError, match="cannot find the value of n 'nothing_here' in the"):
        shell.run_line_magic("mlc_tune", "scale --bind n=nothing_here --trials 8")


def test_mlc_machine_shows_the_limits_and_where_they_are_cached(shell):
    from IPython.utils.capture import capture_output

    from mlc_jupyter.config import machine_limits_path

    with capture_output() as out:
        shell.run_line_magic("mlc_machine", "")
    bundle = out.outputs[0].data
    assert "fp32 peak, GFLOP/s by vector width" in bundle["text/plain"]
    assert str(machine_limits_path()) in bundle["text/plain"]
    assert 'aria-label="roofline chart"' in bundle["text/html"]
    limits = shell.run_line_magic("mlc_machine", "-o")
    assert limits.machine in bundle["text/plain"] and limits.peak() > 0


def test_mlc_tune_names_a_missing_module_in_one_line(shell):
    with pytest.raises(UsageError, match="cannot find 'nothing_here' in the notebook"):
        shell.run_line_magic("mlc_tune", "nothing_here --trials 4")


def test_a_relax_mlp_tunes_end_to_end_and_matches_numpy(tmp_path):
    import tvm
    from tvm.script import ir as I  # noqa: N812
    from tvm.script import relax as R  # noqa: N812

    from mlc_jupyter.tune import tune

    @I.ir_module
    class MLP:
        @R.function
        def main(
            x: R.Tensor((1, 64), "float32"),
            w0: R.Tensor((32, 64), "float32"),
            w1: R.Tensor((10, 32), "float32"),
        ):
            with R.dataflow():
                h = R.nn.relu(R.matmul(x, R.permute_dims(w0)))
                y = R.matmul(h, R.permute_dims(w1))
                R.output(y)
            return y

    result = tune(MLP, trials=16, per_iter=8, work_dir=tmp_path)
    assert result.kind == "model" and len(result.model_tasks) >= 2
    assert set(result.task_workloads) <= {row.name for row in result.model_tasks}
    assert result.baseline_latency_s and result.best_latency_s
    rng = np.random.default_rng(0)
    x, w0, w1 = (rng.random(s, dtype="float32") for s in [(1, 64), (32, 64), (10, 32)])
    vm = tvm.relax.VirtualMachine(tvm.compile(result.mod, target=result.target), tvm.cpu())
    y = vm["main"](*(tvm.runtime.tensor(a) for a in (x, w0, w1))).numpy()
    np.testing.assert_allclose(y, np.maximum(x @ w0.T, 0) @ w1.T, rtol=1e-4)


def test_mlc_tune_on_an_imported_model_reports_each_kernel_and_a_table(shell, tmp_path, capsys):
    shell.run_cell("import torch\nfrom model_support import mlp\nmodel = mlp()")
    shell.run_line_magic("mlc_import", "model --inputs 'torch.randn(1, 784)' --quiet")
    shell.run_line_magic("mlc_tune", f"model_relax --trials 16 --per-iter 8 --work-dir {tmp_path}")
    out = capsys.readouterr().out
    result = shell.user_ns["model_relax_tuned"]
    assert result.kind == "model" and "bound model_relax_tuned" in out
    # 16 trials reach one kernel (each gets 16 at least): the header says so
    assert "tuning kernel 1 of the 1 this budget reaches" in out and "of the model's time" in out
    assert "tuning kernel 2" not in out
    assert "kernel" in out and "share" in out and "kept" in out  # the per-kernel table
    # both builds timed in turns, each with its spread: the speed-up says whether it is measurable
    assert result.baseline_timing is not None and result.timing is not None
    assert result.kept in ("tuned", "default build") and result.measurable is not None
    report = shell.run_line_magic("mlc_time", "model_relax model_relax_tuned --no-compile -o")
    assert report.names == ["model_relax", "model_relax_tuned", "model"]
    assert all(t.correct for t in report.timings)


def test_mlc_tune_keeps_a_kernel_no_candidate_beats_and_says_so(shell, tmp_path, capsys):
    from tvm import te

    a = te.placeholder((16, 16), name="A")
    b = te.compute((16, 16), lambda i, j: a[i, j] + 1.0, name="B")
    shell.user_ns["add_one"] = te.create_prim_func([a, b])
    shell.run_line_magic("mlc_tune", f"add_one --trials 8 --per-iter 8 --work-dir {tmp_path}")
    out = capsys.readouterr().out
    assert shell.user_ns["add_one_tuned"].kept == "as written"
    out = unwrapped(out)
    assert "kept     the kernel as written" in out and "slower than the kernel as written" in out
