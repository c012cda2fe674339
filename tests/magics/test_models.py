"""``%mlc_import`` in a real IPython shell, and the imported model through ``%mlc_build`` and
``%mlc_time`` (PyTorch beside TVM, per-kernel breakdown)."""

from __future__ import annotations

from mlc_jupyter.compilation.cached_build import Built
from mlc_jupyter.display.profile import profile_bundle
from mlc_jupyter.errors import ModelImportError
from mlc_jupyter.measure import profile_kernels
from mlc_jupyter.results import ImportedModel


def _setup(shell) -> None:
    shell.run_cell("import torch\nfrom model_support import mlp\nmodel = mlp()")


def test_mlc_import_binds_summarises_builds_and_races_pytorch(shell, capfd):
    _setup(shell)
    assert shell.run_cell("%mlc_import model --inputs 'torch.randn(1, 784)'").success
    imported = shell.user_ns["model_relax"]
    assert isinstance(imported, ImportedModel)
    out, err = capfd.readouterr()
    assert "Warning" not in err  # PyTorch's FutureWarning at torch.export is folded, not stderr
    assert "model_relax: Relax module of Sequential via torch.export" in out
    assert "operators: add x2, matmul x2, permute_dims x2, nn.relu x1" in out
    assert "kernels a build makes (2" in out and "def main(" in out
    assert shell.run_cell("%mlc_build model_relax").success
    assert isinstance(shell.user_ns["model_relax_lib"], Built)
    assert "got default schedules" in capfd.readouterr().out
    report = shell.run_line_magic("mlc_time", "model_relax_lib --no-compile --repeat 2 -o")
    assert report.names == ["model_relax_lib", "model"]  # the imported model's PyTorch original
    assert all(t.correct for t in report.timings)
    # a model's FLOPs are its kernels': 2 * (784 * 128 + 128 * 10) multiply-adds and the rest
    assert all(t.flops and t.flops > 2 * (784 * 128 + 128 * 10) for t in report.timings)
    assert report.timings[0].gflops and report.timings[0].intensity
    assert "variant" in capfd.readouterr().out  # -o shows the table too, as %timeit -o does


def test_breakdown_shows_where_the_time_goes_as_a_table_and_a_bar_chart(shell, capsys):
    _setup(shell)
    shell.run_cell("%mlc_import model --inputs 'torch.randn(1, 784)' --as m --quiet")
    assert shell.run_cell("%mlc_time m --no-compile --repeat 2 --breakdown").success
    out = capsys.readouterr().out
    assert "where the time of m goes" in out and "sum of kernels" in out
    profile = profile_kernels(shell.user_ns["m"], runs=2)
    bundle = profile_bundle(profile)
    assert "<svg" in bundle["text/html"] and "<table" in bundle["text/html"]
    assert profile.peak_gflops and profile.bandwidth_gbs  # each kernel against this machine's roof
    assert "% of roof" in bundle["text/plain"] and "bound" in bundle["text/plain"]


def test_an_operator_tvm_lacks_is_one_short_error_naming_it(shell):
    shell.run_cell("import torch\nclass Odd(torch.nn.Module):\n"
                    "    def forward(self, x):\n        return torch.special.bessel_j0(x)\n")  # fmt: skip
    result = shell.run_cell("%mlc_import Odd() --inputs 'torch.randn(3)'")
    err = result.error_in_exec
    assert isinstance(err, ModelImportError)
    lines = err._render_traceback_()
    assert (
        len(lines) == 2
        and "bessel_j0" in lines[0]
        and "return torch.special.bessel_j0(x)" in lines[0]
    )
    assert "Odd_relax" not in shell.user_ns and "Odd()_relax" not in shell.user_ns


def test_mlc_import_names_a_missing_model_in_one_line(shell):
    result = shell.run_cell("%mlc_import nothing_here --inputs 1")
    assert "cannot find the model 'nothing_here'" in str(result.error_in_exec)
