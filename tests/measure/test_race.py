"""Races: PyTorch models beside TVM builds, tuple outputs checked one by one, samples in turns,
and where a Relax model's time goes, kernel by kernel."""

from __future__ import annotations

import pytest
import torch
from build_support import mm_relu
from model_support import mlp

from mlc_jupyter.errors import TimingError
from mlc_jupyter.measure import Sampling, profile_kernels, time_functions
from mlc_jupyter.measure.turns import samples_in_turns
from mlc_jupyter.models import import_model

FAST = {"sampling": Sampling(repeat=2, min_repeat_ms=5)}


class TwoHeads(torch.nn.Module):
    """A model whose forward returns a tuple: logits and their softmax."""

    def __init__(self, seed: int = 0) -> None:
        super().__init__()
        torch.manual_seed(seed)
        self.linear = torch.nn.Linear(16, 4)

    def forward(self, x):
        y = self.linear(x)
        return y, torch.softmax(y, dim=-1)


def test_samples_are_taken_one_of_each_per_round():
    order = []
    samplers = [lambda n=n: order.append(n) or float(n + 1) for n in range(3)]
    samples = samples_in_turns(samplers, rounds=2)
    assert order == [0, 1, 2, 0, 1, 2]
    assert samples == [[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]]


def test_a_model_with_a_tuple_of_outputs_is_checked_output_by_output():
    model = TwoHeads().eval()
    imported = import_model(model, torch.randn(2, 16))
    report = time_functions({"two_heads": imported}, torch_compile=False, **FAST)
    assert report.names == ["two_heads", "TwoHeads"]  # the model it came from is the reference
    assert all(t.correct and t.median_s for t in report.timings)
    assert report["TwoHeads"].kind == "torch"
    other = TwoHeads(seed=1).eval()
    wrong = time_functions({"two_heads": imported}, ref=other, torch_compile=False, **FAST)
    assert wrong["two_heads"].correct is False
    assert "output #0 differs from the reference" in wrong["two_heads"].error


def test_a_pytorch_model_races_eager_and_under_torch_compile(book_mlp):
    model, imported = book_mlp
    report = time_functions({"model": model, "mlp": imported}, **FAST)
    assert report.names == ["model", "torch.compile(model)", "mlp"]
    assert report["model"].speedup == pytest.approx(1.0)
    compiled = report["torch.compile(model)"]
    assert compiled.correct or compiled.error.startswith("torch.compile failed")
    assert report["mlp"].correct and report["mlp"].median_s > 0


def test_a_profile_names_each_kernel_with_its_calls_and_share(book_mlp, book_mlp_profile):
    imported, profile = book_mlp[1], book_mlp_profile
    assert {k.name for k in profile.kernels} == {k for k, _ in imported.summary.kernels}
    assert all(k.calls == 1 and k.seconds > 0 and k.gflops for k in profile.kernels)
    assert profile.total_s > 0
    # the shares are fractions of one sum: equal to it up to the rounding of floats
    assert sum(profile.share(k) for k in profile.kernels) <= 1.0 + 1e-12


def test_a_profile_needs_a_relax_model():
    with pytest.raises(TimingError, match="needs a Relax model"):
        profile_kernels(mm_relu())


def test_pytorch_races_on_the_cpu_beside_a_cpu_build_and_each_row_names_its_device(book_mlp):
    imported = book_mlp[1]
    report = time_functions({"mlp": imported}, torch_compile=False, **FAST)
    assert [t.device for t in report.timings] == ["cpu", "cpu"]


def test_for_a_cuda_build_pytorch_is_placed_on_the_gpu_or_left_out_saying_why(monkeypatch):
    from mlc_jupyter.measure.race import torch_contenders, torch_placement

    assert torch_placement("llvm").device == "cpu"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert torch_placement("cuda -arch=sm_90a").device == "cuda:0"  # the TVM build's device
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    plan = torch_placement("cuda -arch=sm_90a")
    assert plan.device is None
    assert plan.reason.startswith("PyTorch rows left out: the TVM variant runs on the GPU (cuda:0)")
    assert "on the CPU they would race another machine" in plan.reason
    rows = torch_contenders(mlp(), [torch.randn(1, 784).numpy()], "model", True, plan)
    assert [r.name for r in rows] == ["model", "torch.compile(model)"]
    assert all(r.error == plan.reason and r.outputs is None for r in rows)  # nothing runs
