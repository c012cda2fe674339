"""On a CUDA GPU: every kind of CUDA result can be timed, checked and rebuilt.

A tuning result (``MM_tuned``), its build (``MM_tuned_lib``), a trace replayed from it and an
imported model built for CUDA each go through ``%mlc_time`` against a reference. Marked ``gpu``
and skipped without a local CUDA GPU (the build side runs everywhere:
``tests/compilation/test_cached_build.py``).
"""

from __future__ import annotations

import pytest
from build_support import matmul

from mlc_jupyter.compilation import gpu_present

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not gpu_present("cuda"), reason="needs a local CUDA GPU"),
]


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    from mlc_jupyter.tune import tune

    work = tmp_path_factory.mktemp("cuda_tune")
    return tune(matmul(256), "cuda", trials=16, work_dir=work)


def test_mlc_time_times_a_cuda_tuning_result_and_its_build(shell, tuned):
    shell.user_ns["MM_tuned"] = tuned
    shell.run_line_magic("mlc_build", "MM_tuned")
    assert shell.user_ns["MM_tuned_lib"].target.kind.name == "cuda"
    report = shell.run_line_magic("mlc_time", 'MM_tuned MM_tuned_lib --ref "A @ B" -o')
    for name in ("MM_tuned", "MM_tuned_lib"):
        row = report[name]
        assert row.correct is True and row.median_s and row.gflops > 0, row
    assert report["torch"].device == "cuda:0" and report["torch"].correct  # A @ B on the GPU
    assert report["numpy"].device == "cpu"


def test_the_trace_of_a_cuda_tuning_result_replays_and_retimes_on_the_gpu(tuned):
    from mlc_jupyter.trace import TraceSession

    session = TraceSession.load(tuned)
    row = session.retime()
    assert row.error == "" and row.correct is True and row.latency_s, row


def test_an_imported_model_built_for_cuda_is_timed_and_checked_against_pytorch(shell):
    shell.run_cell("import torch; from torch import nn; torch.manual_seed(0)")
    shell.run_cell("mlp = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10)).eval()")
    assert shell.run_cell("%mlc_import mlp --inputs 'torch.randn(1, 784)' --as mlp_m").success
    shell.run_line_magic("mlc_build", "mlp_m --target cuda")
    report = shell.run_line_magic("mlc_time", "mlp_m_lib --repeat 3 -o")
    row = report["mlp_m_lib"]
    assert row.correct is True and row.median_s, row
    torch_rows = [t for t in report.timings if t.kind == "torch" and t.median_s]
    assert torch_rows and all(t.device == "cuda:0" for t in torch_rows)  # on the same GPU
    assert row.device == "cuda:0"


@pytest.mark.slow
def test_resnet18_imported_builds_for_cuda_and_matches_pytorch(shell):
    shell.run_cell("import torch, model_support")
    shell.run_cell("rn = model_support.resnet18()")
    assert shell.run_cell("%mlc_import rn --inputs 'torch.randn(1, 3, 224, 224)' --as rn_m").success
    shell.run_line_magic("mlc_build", "rn_m --target cuda")
    report = shell.run_line_magic("mlc_time", "rn_m_lib --repeat 3 -o")
    row = report["rn_m_lib"]
    assert row.correct is True and row.median_s, row


def test_mlc_machine_measures_the_gpus_limits_and_mlc_time_reports_a_share_of_them(shell, tuned):
    limits = shell.run_line_magic("mlc_machine", "--target cuda -o")
    assert limits.is_gpu and limits.peak() > 1000 and limits.bandwidth() > 100
    assert limits.tensor_gflops > limits.peak()  # tensor cores outrun the FMA units
    again = shell.run_line_magic("mlc_machine", "--target cuda -o")
    assert again.cached and again.peak() == limits.peak()
    shell.user_ns["MM_tuned"] = tuned
    report = shell.run_line_magic("mlc_time", 'MM_tuned --ref "A @ B" -o')
    assert report.limits is not None and 0 < report.peak_fraction(report["MM_tuned"]) < 1.5


def test_an_imported_model_tunes_for_cuda_kernel_by_kernel_and_is_timed(tmp_path):
    import torch
    from model_support import mlp

    from mlc_jupyter.measure import time_functions
    from mlc_jupyter.models import import_model
    from mlc_jupyter.tune import tune

    imported = import_model(mlp(), (torch.randn(1, 784),))
    result = tune(imported, "cuda", trials=16, work_dir=tmp_path)
    assert result.kind == "model" and result.target.kind.name == "cuda"
    report = time_functions({"mlp_tuned": result}, torch_compile=False)
    assert report["mlp_tuned"].correct is True and report["mlp_tuned"].device == "cuda:0"
