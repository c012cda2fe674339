"""``torch.compile`` with the workbench's backend: each graph Dynamo captures is built here."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

torch = pytest.importorskip("torch")

from mlc_jupyter import to_torch, torch_backend  # noqa: E402 - after the skip
from mlc_jupyter.errors import DeployError  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


class _Broken(torch.nn.Module):
    """Linear, batch norm, ReLU | graph break | Linear: two graphs for the backend."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(16, 8)
        self.norm = torch.nn.BatchNorm1d(8)
        self.head = torch.nn.Linear(8, 4)

    def forward(self, x):
        y = torch.relu(self.norm(self.linear(x)))
        torch._dynamo.graph_break()
        return self.head(y)


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _broken_model():
    torch.manual_seed(0)
    model = _Broken().eval()
    with torch.no_grad():
        model.norm.running_mean.uniform_(-1, 1)
        model.norm.running_var.uniform_(0.5, 2)
    return model


def test_torch_compile_in_a_real_shell_builds_each_graph_of_a_graph_break(shell):
    shell.user_ns.update(model=_broken_model(), torch_backend=torch_backend)
    cell = (
        "import torch\nbackend = torch_backend()\n"
        "compiled = torch.compile(model, backend=backend)\n"
        "x = torch.randn(2, 16, generator=torch.Generator().manual_seed(1))\n"
        "out, again = compiled(x), compiled(2 * x)"
    )
    assert shell.run_cell(cell).success
    ns = shell.user_ns
    model, x = ns["model"], ns["x"]
    torch.testing.assert_close(ns["out"], model(x), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(ns["again"], model(2 * x), rtol=1e-5, atol=1e-5)
    graphs = ns["backend"].graphs
    assert len(graphs) == 2
    assert graphs[0].weights == 6 and graphs[0].inputs == 1  # weights bound, x passed
    assert "graph 0: 3 operators ->" in graphs[0].describe()


def test_weights_passed_as_inputs_follow_changes_to_the_model():
    model = _broken_model()
    backend = torch_backend(params="inputs")
    compiled = torch.compile(model, backend=backend)
    x = torch.randn(2, 16, generator=torch.Generator().manual_seed(2))
    torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)
    assert [g.weights for g in backend.graphs] == [0, 0]
    with torch.no_grad():
        model.head.bias.add_(1.0)
    torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)


def test_options_of_torch_compile_reach_the_backend():
    model = _broken_model()
    backend = torch_backend()
    compiled = torch.compile(model, backend=backend, options={"params": "inputs"})
    x = torch.randn(2, 16, generator=torch.Generator().manual_seed(3))
    torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)
    assert [g.weights for g in backend.graphs] == [0, 0]


def test_torch_compile_finds_the_backend_by_name_through_the_packages_entry_point(tmp_path):
    """What ``pip install`` writes for pyproject's entry point, on a path of its own: PyTorch's
    own discovery then resolves ``backend="mlc_jupyter"`` (in a fresh interpreter)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    backends = project["project"]["entry-points"]["torch_dynamo_backends"]
    info = tmp_path / "mlc_jupyter_probe-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mlc-jupyter-probe\nVersion: 0\n")
    lines = "".join(f"{name} = {target}\n" for name, target in backends.items())
    (info / "entry_points.txt").write_text(f"[torch_dynamo_backends]\n{lines}")
    program = (
        "import torch\n"
        "model = torch.nn.Linear(4, 2).eval()\n"
        "x = torch.ones(3, 4)\n"
        "compiled = torch.compile(model, backend='mlc_jupyter', options={'params': 'inputs'})\n"
        "torch.testing.assert_close(compiled(x), model(x))\n"
        "print('compiled by', type(torch._dynamo.lookup_backend('mlc_jupyter')).__name__)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])}
    ran = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, env=env, timeout=300,
        check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert "compiled by function" in ran.stdout


def test_an_operator_tvm_lacks_is_named_with_the_model_line():
    class Bessel(torch.nn.Module):
        def forward(self, x):
            return torch.special.bessel_j0(x) + 1

    compiled = torch.compile(Bessel(), backend=torch_backend())
    with pytest.raises(Exception, match="TVM cannot translate operator") as info:
        compiled(torch.ones(4))
    assert "bessel_j0" in str(info.value)


class _Flatten(torch.nn.Module):
    """A size read before a graph break: Dynamo passes it to the next graph as an input."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(12, 3)

    def forward(self, x):
        n = x.shape[0]
        torch._dynamo.graph_break()
        return torch.relu(self.linear(x.reshape(n, -1)))


@pytest.mark.parametrize("dynamic", [None, True])
def test_a_graph_dynamo_makes_dynamic_is_built_once_per_shape(dynamic):
    torch.manual_seed(0)
    model = _Flatten().eval()
    backend = torch_backend()
    compiled = torch.compile(model, backend=backend, dynamic=dynamic)
    with torch.no_grad():
        for batch in (2, 3, 5, 3):  # with dynamic=None Dynamo goes dynamic at the second shape
            x = torch.randn(batch, 3, 4)
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)
    assert [graph.shapes for graph in backend.graphs] == [((2, 3, 4),), ((3, 3, 4),), ((5, 3, 4),)]
    assert "1 input(s) (3x3x4), 2 weight(s) bound" in backend.graphs[1].describe()


def test_outputs_require_grad_as_eager_ones_and_backward_says_why_there_is_no_gradient():
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2).eval()
    compiled = torch.compile(model, backend=torch_backend())
    x = torch.randn(3, 4)
    out = compiled(x)  # grad mode on, weights that require grad: eager's output would too
    torch.testing.assert_close(out, model(x), rtol=1e-5, atol=1e-5)
    assert out.requires_grad
    with pytest.raises(DeployError, match="builds for inference: no gradient flows through it"):
        out.sum().backward()
    with torch.no_grad():
        assert not compiled(x).requires_grad


def test_unknown_options_are_refused():
    with pytest.raises(DeployError, match="unknown params 'frozen'"):
        torch_backend(params="frozen")
    with pytest.raises(DeployError, match="records must be a %mlc_tune result or a tuning work"):
        torch_backend(records=3)


@pytest.mark.slow
def test_a_tuned_models_records_reach_torch_compile_and_the_torch_module(tmp_path):
    from mlc_jupyter import tune as tuning
    from mlc_jupyter.models import import_model

    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8)
    ).eval()
    x = torch.randn(2, 64, generator=torch.Generator().manual_seed(5))
    tuned = tuning.tune(import_model(model, x), None, trials=16, work_dir=tmp_path, seed=0)
    kept = [task.name for task in tuned.model_tasks if task.trials]
    backend = torch_backend(records=tuned)
    compiled = torch.compile(model, backend=backend)
    torch.testing.assert_close(compiled(x), model(x), rtol=1e-5, atol=1e-5)
    (graph,) = backend.graphs
    assert kept and set(kept) <= set(graph.tuned)
    assert f"{len(graph.tuned)} from tuned records" in graph.describe()
    torch.testing.assert_close(to_torch(tuned)(x), model(x), rtol=1e-5, atol=1e-5)
    # a model none of whose kernels the records hold says so, and runs on default schedules
    other = torch.nn.Sequential(torch.nn.Linear(64, 16), torch.nn.Tanh()).eval()
    compiled = torch.compile(other, backend=backend)
    torch.testing.assert_close(compiled(x), other(x), rtol=1e-5, atol=1e-5)
    assert backend.graphs[1].tuned == ()
    assert "none in the tuned records (default schedules)" in backend.graphs[1].describe()
