"""Dataflow graphs of Relax functions: operators as nodes, tensors as edges, fused functions as
boxes or single nodes; SVG through Graphviz's dot, text without it; ``%mlc_graph``, ``%%relax
--graph`` and an imported ResNet-18 (tests/model_support.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mlc_jupyter.graph import (
    dot_available,
    function_graph,
    graph_svg,
    graph_text,
    module_op_counts,
    to_dot,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "passes"))
from chapter7 import MULTIPLY_ADD, load_chapter

needs_dot = pytest.mark.skipif(not dot_available(), reason="Graphviz's dot is not installed")
FUSE = "relax.transform.LegalizeOps()\nrelax.transform.AnnotateTIROpPattern()\nrelax.transform.FuseOps()"


@pytest.fixture
def mlp(shell):
    return load_chapter(shell)["MLPModel"]


@pytest.fixture
def fused(mlp):
    from mlc_jupyter.passes import run_pass_cell

    return run_pass_cell(FUSE, mlp).mod


def test_the_mlp_reads_as_operators_with_weights_folded_and_shapes_on_the_edges(mlp):
    graph = function_graph(mlp)
    assert [n.label for n in graph.operators] == [
        "permute_dims", "matmul", "add", "nn.relu", "permute_dims", "matmul", "add"]  # fmt: skip
    matmul = graph.operators[1]
    into = {graph.nodes[int(e.src[1:])].label: e.label for e in graph.edges if e.dst == matmul.id}
    assert into == {"x": "1×784", "permute_dims": "784×128"}
    assert graph.operators[0].weights == ("128×784",)  # w0, a constant, folded into its reader
    assert "  add(matmul, w 128) -> 1×128" in graph_text(graph).splitlines()
    assert module_op_counts(mlp) == {"add": 2, "matmul": 2, "nn.relu": 1, "permute_dims": 2}


def test_fused_functions_are_boxes_or_single_nodes(fused):
    grouped = function_graph(fused, fused="group")
    assert sorted(grouped.groups.values()) == ["fused_matmul1_add1", "fused_matmul_add_relu"]
    box = next(k for k, v in grouped.groups.items() if v == "fused_matmul_add_relu")
    assert [n.label for n in grouped.nodes if n.group == box] == ["matmul", "add", "relu"]
    assert f"subgraph {box} {{" in to_dot(grouped)
    collapsed = function_graph(fused, fused="collapse")
    assert not collapsed.groups
    assert [n.label for n in collapsed.operators if n.kind == "call"] == [
        "fused_matmul_add_relu", "fused_matmul1_add1"]  # fmt: skip


@needs_dot
def test_dot_draws_an_inline_svg_with_every_operator(fused):
    svg = graph_svg(function_graph(fused, fused="group"))
    assert (
        svg.startswith("<svg") and 'class="mlc-graph"' in svg and "max-width: none" in svg
    )  # its own size: readable
    for name in ("fused_matmul_add_relu", "matmul", "relu", "1×128"):
        assert name in svg


def test_without_dot_every_view_falls_back_to_the_text_listing(monkeypatch, mlp):
    from mlc_jupyter.display.graph import graph_bundle

    monkeypatch.setenv("PATH", "/nonexistent")
    dot_available.cache_clear()
    try:
        assert graph_svg(function_graph(mlp)) is None
        bundle = graph_bundle(function_graph(mlp))
        assert "<svg" not in bundle["text/html"] and "install Graphviz" in bundle["text/html"]
        assert "matmul(x, permute_dims)" in bundle["text/plain"]
    finally:
        dot_available.cache_clear()


def test_the_graph_magic_and_relax_cells_show_graphs(shell, mlp):
    view = shell.run_line_magic("mlc_graph", "MLPModel --fused collapse")
    data = view._repr_mimebundle_()
    assert "matmul" in data["text/plain"] and ("<svg" in data["text/html"]) == dot_available()
    assert shell.run_cell("from tvm import relax").success
    result = shell.run_cell("%%relax --graph --quiet\n" + MULTIPLY_ADD)
    assert result.success and "MyModule" in shell.user_ns
    from IPython.core.error import UsageError

    with pytest.raises(UsageError, match="no Relax function 'nope'; the module has: main"):
        shell.run_line_magic("mlc_graph", "MLPModel --func nope")


@pytest.mark.slow
def test_an_imported_resnet18_is_readable_once_fused_functions_collapse():
    pytest.importorskip("torch")
    from model_support import imported_resnet18

    from mlc_jupyter.passes import run_pass_cell

    mod = imported_resnet18()
    graph = function_graph(mod)
    assert sum(n.label == "nn.conv2d" for n in graph.nodes) == 20  # 17 convs + 3 downsamples
    fused = run_pass_cell(FUSE, mod).mod
    auto = function_graph(fused)  # too big to box every fused function: one node each
    assert not auto.groups and len(auto.nodes) < len(graph.nodes) * 2 // 3
    assert any(n.label.startswith("fused_") for n in auto.nodes)
    if dot_available():
        assert graph_svg(auto).startswith("<svg")
