"""A model's constant arithmetic is done in NumPy at build time: weight transposes, batch norm
folded into the convolution's weight and one bias, weight packings run as index permutations."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from build_support import prim_funcs
from model_support import mobilenet_block, torch_seed

from mlc_jupyter.cells import parse_script
from mlc_jupyter.compilation import build_module, resolve_target
from mlc_jupyter.compilation.default_schedule import (
    PACKING_SUFFIX,
    legalize_and_fuse,
    prepare_model,
)
from mlc_jupyter.compilation.weight_folding import NotALayoutCopy, layout_copy
from mlc_jupyter.models import import_model
from mlc_jupyter.tvm_compat import compile as tvm_compile
from mlc_jupyter.tvm_compat import empty, param_buffers, tensor, tvm


def conv_bn_net():
    """A convolution with a bias, batch norm with statistics that are not the initial ones,
    ReLU, then a second convolution and batch norm."""
    from torch import nn

    torch_seed(3)
    model = nn.Sequential(
        nn.Conv2d(8, 16, 3, 1, 1, bias=True), nn.BatchNorm2d(16), nn.ReLU(),
        nn.Conv2d(16, 16, 1, bias=False), nn.BatchNorm2d(16),
    )  # fmt: skip
    for layer in model.modules():
        if isinstance(layer, nn.BatchNorm2d):
            layer.running_mean.uniform_(-1, 1)
            layer.running_var.uniform_(0.5, 2)
            layer.weight.data.uniform_(0.5, 1.5)
            layer.bias.data.uniform_(-1, 1)
    return model.eval()


def test_batch_norm_becomes_the_convolutions_weight_and_one_bias():
    model = conv_bn_net()
    x = torch.randn(1, 8, 12, 12, generator=torch.Generator().manual_seed(4))
    imported = import_model(model, x)
    fused = legalize_and_fuse(imported.mod, resolve_target("llvm"))
    names = sorted(prim_funcs(fused))
    # conv + its bias and batch norm as one add + ReLU, then conv + one add: no subtract / divide / multiply / sqrt kernels
    assert not [n for n in names if any(op in n for op in ("subtract", "divide", "sqrt"))], names
    # (the 1x1 convolution is legalised as the matrix product it is: compilation/pointwise.py)
    assert [n for n in names if "conv2d" in n] == [
        "fused_conv2d_add_relu",
        "fused_conv2d_pointwise_add",
    ]
    built = build_module(imported, persist=False)
    with torch.no_grad():
        expected = model(x).numpy()
    np.testing.assert_allclose(np.asarray(built(x.numpy())), expected, rtol=1e-4, atol=1e-4)


def test_weight_packings_run_in_numpy_as_tvm_runs_them():
    model = mobilenet_block()
    x = torch.randn(1, 32, 16, 16)
    prepared = prepare_model(import_model(model, x).mod, resolve_target("llvm"))
    transform = tvm().relax.transform
    with tvm().transform.PassContext(opt_level=3):
        split = transform.SplitLayoutRewritePreproc()(prepared.mod)
    packings = [f for n, f in prim_funcs(split).items() if n.endswith(PACKING_SUFFIX)]
    assert len(packings) == 2  # the depthwise and the pointwise convolution's weights
    rng = np.random.default_rng(0)
    for func in packings:
        buffers = [[int(d) for d in b.shape] for b in param_buffers(func)]
        inputs = [rng.random(shape, dtype="float32") for shape in buffers[:1]]
        lib = tvm_compile(tvm().IRModule({"main": func.with_attr("global_symbol", "main")}), "llvm")
        outs = [empty(shape) for shape in buffers[1:]]
        lib["main"](*[tensor(a) for a in inputs], *outs)
        ours = layout_copy(func, inputs)
        assert len(ours) == len(outs)
        for got, want in zip(ours, outs, strict=True):
            np.testing.assert_array_equal(got, want.numpy())


def test_a_kernel_that_computes_is_not_run_as_a_layout_copy():
    from tvm import te

    a = te.placeholder((8,), name="A")
    b = te.compute((8,), lambda i: a[i] * 2.0, name="B")
    with pytest.raises(NotALayoutCopy, match="one element"):
        layout_copy(te.create_prim_func([a, b]), [np.ones(8, "float32")])


def test_a_layout_copy_that_reads_across_its_input_gives_numpys_transpose():
    from tvm import te

    a = te.placeholder((6, 4, 8), name="A")
    b = te.compute((4, 8, 6), lambda i, j, k: a[k, i, j], name="B")  # reads a transposed
    c = te.compute((2, 6, 4, 4), lambda p, i, j, q: a[i, j, p * 4 + q], name="C")  # and split
    data = np.arange(6 * 4 * 8, dtype="float32").reshape(6, 4, 8)
    (got,) = layout_copy(te.create_prim_func([a, b]), [data])
    np.testing.assert_array_equal(got, data.transpose(1, 2, 0))
    (got,) = layout_copy(te.create_prim_func([a, c]), [data])
    np.testing.assert_array_equal(got, data.reshape(6, 4, 2, 4).transpose(2, 0, 1, 3))
    d = te.compute((4, 8, 3), lambda i, j, k: a[k + 2, i, j], name="D")  # from an offset
    (got,) = layout_copy(te.create_prim_func([a, d]), [data])
    np.testing.assert_array_equal(got, data[2:5].transpose(1, 2, 0))
    e = te.compute((4, 8, 6), lambda i, j, k: a[k, i, 7 - j], name="E")  # and reversed
    (got,) = layout_copy(te.create_prim_func([a, e]), [data])
    np.testing.assert_array_equal(got, data[:, :, ::-1].transpose(1, 2, 0))


#: A weight packing as TVM splits it off: the block runs over the HWIO weight and stores each
#: element into panels of 32 output channels in two vectors of 16 (``k // 32, k % 32 // 16,
#: k % 16``), the input channels in fours; ``odd`` cuts the channels at 24, across the panels.
PACKING = """
@T.prim_func
def pack(W: T.Buffer((3, 3, 8, 64), "float32"), P: T.Buffer((2, 3, 3, 2, 4, 2, 16), "float32"),
         Q: T.Buffer((3, 3, 3, 8, 24), "float32")):
    for h, w, c, k in T.grid(3, 3, 8, 64):
        with T.block("P"):
            vh, vw, vc, vk = T.axis.remap("SSSS", [h, w, c, k])
            P[vk // 32, vh, vw, vc // 4, vc % 4, vk % 32 // 16, vk % 16] = W[vh, vw, vc, vk]
    for h, w, c, k in T.grid(3, 3, 8, 72):
        with T.block("Q"):
            vh, vw, vc, vk = T.axis.remap("SSSS", [h, w, c, k])
            Q[vk // 24, vh, vw, vc, vk % 24] = W[vh, vw, vc, vk % 64]
"""


def test_a_packing_that_splits_the_channels_into_panels_gives_numpys_reshape():
    func = parse_script(PACKING, {}, kind="tir").objects["pack"]
    weight = np.arange(3 * 3 * 8 * 64, dtype="float32").reshape(3, 3, 8, 64)
    panels, odd = layout_copy(func, [weight])
    expected = weight.reshape(3, 3, 2, 4, 2, 2, 16).transpose(4, 0, 1, 2, 3, 5, 6)
    np.testing.assert_array_equal(panels, expected)
    channels = np.concatenate([weight, weight[..., :8]], axis=-1)  # k % 64 for k < 72
    np.testing.assert_array_equal(odd, channels.reshape(3, 3, 8, 3, 24).transpose(3, 0, 1, 2, 4))


def test_a_copy_whose_index_leaves_its_input_is_not_run_as_a_layout_copy():
    from tvm import te

    a = te.placeholder((8, 4), name="A")
    b = te.compute((8, 4), lambda i, j: a[i, j + 1], name="B")  # j + 1 reaches column 4
    c = te.compute((8, 4), lambda i, j: a[i, 4 - j], name="C")  # 4 - 0 too
    d = te.compute((8, 4), lambda i, j: a[i, -1], name="D")  # a column before the first
    for copy in (b, c, d):
        with pytest.raises(NotALayoutCopy, match="leaves its axis"):
            layout_copy(te.create_prim_func([a, copy]), [np.ones((8, 4), "float32")])


def test_a_build_holds_its_weights_packed_and_no_packing_kernel():
    model = mobilenet_block()
    x = torch.randn(1, 32, 16, 16)
    built = build_module(import_model(model, x), persist=False)
    assert not [n for n in prim_funcs(built.mod) if PACKING_SUFFIX in n]
    with torch.no_grad():
        expected = model(x).numpy()
    np.testing.assert_allclose(np.asarray(built(x.numpy())), expected, rtol=1e-4, atol=1e-4)
