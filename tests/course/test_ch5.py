"""Chapter 5 (framework integration): the BlockBuilder module, as the course printed it, parses
through ``%%relax`` and computes relu(A @ B); the book's own pre-2023 listing is refused clearly."""

from __future__ import annotations

import numpy as np
from course_support import gone_listing_error, listing, run_listing, run_relax

RNG = np.random.default_rng(5)
A = RNG.random((128, 128), dtype="float32")
B = RNG.random((128, 128), dtype="float32") - 0.5


def _chapter_5_blockbuilder_module():
    """The book's §5.3 code: te_matmul and te_relu emitted into ``main`` with a BlockBuilder."""
    from tvm import relax, te

    def te_matmul(a, b):
        k = te.reduce_axis((0, a.shape[1]), name="k")
        return te.compute(
            (a.shape[0], b.shape[1]), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), "matmul"
        )

    def te_relu(a):
        return te.compute(a.shape, lambda *i: te.max(a(*i), 0), name="relu")

    a = relax.Var("A", relax.TensorType((128, 128), "float32"))
    b = relax.Var("B", relax.TensorType((128, 128), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main"):
        with bb.dataflow():
            c = bb.emit_te(te_matmul, a, b)
            d = bb.emit_te(te_relu, c)
            r = bb.emit_output(d)
        bb.emit_func_output(r, params=[a, b])
    return bb.get()


def test_blockbuilder_module_as_the_course_printed_it_computes_relu_of_matmul(shell):
    mod = run_listing(shell, "ch5_blockbuilder_module_printed", "relax")
    assert shell.user_ns["Module"] is mod
    assert bool(mod["te_matmul"].attrs["tirx.noalias"])
    np.testing.assert_allclose(run_relax(mod, A, B), np.maximum(A @ B, 0), rtol=1e-4, atol=1e-4)


def test_what_tvm_027_prints_for_the_blockbuilder_module_parses_back_and_computes(shell):
    built = _chapter_5_blockbuilder_module()
    value = shell.run_cell_magic("relax", "--quiet", built.script())
    assert value is None
    mod = shell.user_ns["_"]
    np.testing.assert_allclose(run_relax(mod, A, B), np.maximum(A @ B, 0), rtol=1e-4, atol=1e-4)


def test_pre_2023_listing_of_section_5_3_3_is_refused_at_its_first_old_annotation(shell):
    err = gone_listing_error(shell, "ch5_blockbuilder_module_pre2023", "relax")
    assert "Tensor" in err.message
    assert err.source_line.lstrip().startswith("def main(A: Tensor(")


#: The chapter's imports and models (§5.4 ``MyModel``, §5.5 ``MLP``), as the book types them.
_CH5_SETUP = """\
import numpy as np
import tvm
from tvm import relax, te, topi
import torch
import torch.nn as nn
from torch import fx

class MyModel(nn.Module):
    def __init__(self):
        super(MyModel, self).__init__()
        self.weight = nn.Parameter(torch.randn(128, 128))

    def forward(self, x):
        x = torch.matmul(x, self.weight)
        x = torch.relu(x)
        return x

class MLP(nn.Module):
    def __init__(self):
        super(MLP, self).__init__()
        self.linear0 = nn.Linear(784, 128, bias=True)
        self.relu = nn.ReLU()
        self.linear1 = nn.Linear(128, 10, bias=True)

    def forward(self, x):
        x = self.linear0(x)
        x = self.relu(x)
        x = self.linear1(x)
        return x

torch.manual_seed(5)
model, mlp_model = MyModel(), MLP()
"""

#: The three translations of §5.4-5.6, each from the book's cell.
_CH5_MODULES = {
    "MyModule": """\
MyModule = from_fx(
    fx.symbolic_trace(model),
    input_shapes = [(1, 128)],
    call_function_map = {
        torch.matmul: map_matmul,
        torch.relu: map_relu,
    },
    call_module_map={},
)""",
    "MLPModule": """\
MLPModule = from_fx(
    fx.symbolic_trace(mlp_model),
    input_shapes = [(1, 784)],
    call_function_map={
    },
    call_module_map={
        torch.nn.Linear: map_nn_linear,
        torch.nn.ReLU: map_nn_relu,
    },
)""",
    "MLPModuleHighLevel": """\
MLPModuleHighLevel = from_fx(
    fx.symbolic_trace(mlp_model),
    input_shapes = [(1, 784)],
    call_function_map={
    },
    call_module_map={
        torch.nn.Linear: map_nn_linear_op,
        torch.nn.ReLU: map_nn_relu_op,
    },
)""",
}


def test_the_three_fx_translations_of_sections_5_4_to_5_6_build_in_plain_cells(shell):
    """§5.6's high-level translation returns a dataflow variable (``from_fx`` returns ``output``,
    not the emitted ``fn_output``): ``relax.build`` in a plain cell builds it, as TVM does."""
    from IPython.utils.capture import capture_output

    for text in (_CH5_SETUP, listing("ch5_fx_translators"), *_CH5_MODULES.values()):
        assert shell.run_cell(text).success, text
    for name, model, width in (("MyModule", "model", 128), ("MLPModule", "mlp_model", 784),
                               ("MLPModuleHighLevel", "mlp_model", 784)):  # fmt: skip
        cell = (
            f'ex = relax.build({name}, target="llvm")\n'
            "vm = relax.VirtualMachine(ex, tvm.cpu())\n"
            f"data = np.random.default_rng(0).random((1, {width}), dtype='float32')\n"
            'nd_res = vm["main"](tvm.nd.array(data))\n'
            f"torch_res = {model}(torch.from_numpy(data)).detach().numpy()\n"
        )
        with capture_output() as captured:
            result = shell.run_cell(cell)
        assert result.success, (name, captured.stdout, captured.stderr)
        assert "dead codes" not in captured.stderr
        ns = shell.user_ns
        np.testing.assert_allclose(ns["nd_res"].numpy(), ns["torch_res"], rtol=1e-4, atol=1e-4)
