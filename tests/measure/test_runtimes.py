"""--runtimes: the PyTorch model under ONNX Runtime, OpenVINO and ``torch.compile`` with inductor
freezing, raced beside the TVM build, each row checked against PyTorch first; a runtime that is
not installed, or fails on the model, is a row that says why."""

from __future__ import annotations

import sys

import pytest
import torch
from build_support import mm_relu
from IPython.utils.capture import capture_output
from model_support import mlp

from mlc_jupyter.compilation import build_module
from mlc_jupyter.errors import TimingError
from mlc_jupyter.measure import Sampling, time_functions
from mlc_jupyter.measure.runtimes import RUNTIME_PACKAGES, missing_packages

FAST = {"sampling": Sampling(repeat=2, min_repeat_ms=5)}
MISSING = sorted({p for runtime in RUNTIME_PACKAGES for p in missing_packages(runtime)})
needs_runtimes = pytest.mark.skipif(
    bool(MISSING),
    reason=f"the bench extra is not installed ({', '.join(MISSING)} missing): "
    "pip install onnxruntime onnx onnxscript openvino",
)


class Guarded(torch.nn.Module):
    """The MLP behind a test on the input's values: eager and ``torch.compile`` run it,
    ``torch.export`` (so the ONNX exporter) cannot follow a branch on data."""

    def __init__(self) -> None:
        super().__init__()
        self.net = mlp()

    def forward(self, x):
        if x.sum() > -1e9:
            return self.net(x)
        return -self.net(x)


@pytest.fixture(scope="module")
def mlp_build(book_mlp):
    model, imported = book_mlp  # imported once per session (conftest.py)
    return model, imported, build_module(imported)


@needs_runtimes
@pytest.mark.slow
def test_the_runtimes_race_beside_the_build_each_checked_and_prepared_once(mlp_build):
    model, _, built = mlp_build
    report = time_functions({"mlp": built}, ref=model, runtimes=True, torch_compile=False, **FAST)
    label = "Sequential"  # the model's class: no notebook namespace names it here
    assert report.names == [
        "mlp",
        label,
        f"torch.compile+freezing({label})",
        f"onnxruntime({label})",
        f"openvino({label})",
    ]
    assert all(t.correct and t.median_s > 0 and t.device == "cpu" for t in report.timings)
    assert [t.kind for t in report.timings[2:]] == ["torch", "onnxruntime", "openvino"]
    assert sum("prepared in" in note for note in report.notes) == 3
    again = time_functions({"mlp": built}, ref=model, runtimes=True, torch_compile=False, **FAST)
    assert all(t.correct for t in again.timings)
    assert not any("prepared in" in note for note in again.notes)  # exported once per model


@needs_runtimes
@pytest.mark.slow
def test_a_runtime_that_cannot_take_the_model_says_why_and_the_others_still_race(mlp_build):
    _, _, built = mlp_build
    model = Guarded().eval()
    report = time_functions({"mlp": built}, ref=model, runtimes=True, torch_compile=False, **FAST)
    onnx_row = report["onnxruntime(Guarded)"]
    assert onnx_row.median_s is None
    assert onnx_row.error.startswith("ONNX Runtime failed: Failed to export the model with")
    assert "data-dependent" in onnx_row.error and "\x1b[" not in onnx_row.error
    assert report["torch.compile+freezing(Guarded)"].correct
    assert report["openvino(Guarded)"].correct  # traced: the branch taken is recorded


def test_mlc_time_runtimes_names_the_missing_packages_and_how_to_install_them(shell, monkeypatch):
    for package in ("onnxruntime", "onnx", "onnxscript", "openvino"):
        monkeypatch.setitem(sys.modules, package, None)  # import fails: absent
    shell.user_ns["model"] = torch.nn.Sequential(torch.nn.Linear(16, 4)).eval()
    shell.user_ns["x"] = torch.randn(2, 16)
    shell.run_line_magic("mlc_import", "model --inputs x --quiet")
    shell.run_line_magic("mlc_build", "model_relax")
    with capture_output() as out:
        report = shell.run_line_magic(
            "mlc_time", "model_relax_lib --ref model --runtimes --no-compile --repeat 2 -o"
        )
    onnx_row, openvino_row = report["onnxruntime(model)"], report["openvino(model)"]
    assert onnx_row.error == (
        "not installed (onnxruntime, onnx, onnxscript missing): "
        "pip install onnxruntime onnx onnxscript"
    )
    assert openvino_row.error == "not installed (openvino missing): pip install openvino"
    assert report["torch.compile+freezing(model)"].correct  # needs PyTorch only
    shown = out.outputs[0].data
    assert "openvino(model): not installed" in shown["text/plain"]
    assert "pip install onnxruntime onnx onnxscript" in shown["text/html"]


def test_runtimes_need_a_pytorch_model_in_the_race():
    with pytest.raises(
        TimingError, match="--runtimes races ONNX Runtime and OpenVINO on a PyTorch"
    ):
        time_functions({"mm": build_module(mm_relu())}, runtimes=True, **FAST)
