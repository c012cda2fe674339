"""The direct-convolution schedule: the kernels it takes, the tile its rule picks, and a small
depthwise-separable network built with it (scheduled, weights packed at build time, right)."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from build_support import prim_funcs
from model_support import mobilenet_v1

from mlc_jupyter.compilation import build_module, clear_cache, winograd
from mlc_jupyter.compilation.conv_schedule import (
    Decisions,
    NotWindow,
    Window,
    depthwise_rule_tile,
    find_window,
    fits_registers,
    rule_decisions,
    rule_tile,
)
from mlc_jupyter.compilation.default_schedule import PACKED_SUFFIX, PACKING_SUFFIX
from mlc_jupyter.compilation.targets import resolve_target
from mlc_jupyter.models import import_model
from mlc_jupyter.tvm_compat import Schedule, param_buffers, tvm, vector_bits

#: A CPU with AVX2's 16 registers of 8 lanes, where a tile across rows is the rule (the host may
#: have AVX-512's 32: its code for this target still runs there).
AVX2_TARGET = {"kind": "llvm", "mcpu": "znver3"}
host_has_avx2 = pytest.mark.skipif(
    vector_bits(resolve_target(None)) < 256, reason="the host CPU cannot run AVX2 code"
)


@pytest.fixture(scope="module")
def net():
    model = mobilenet_v1(0.25)
    x = torch.randn(1, 3, 64, 64, generator=torch.Generator().manual_seed(1))
    return model, x, build_module(import_model(model, x), persist=False)


def test_every_convolution_and_pooling_kernel_gets_the_register_tile(net):
    kernels = prim_funcs(net[2].mod)
    windows = [n for n in kernels if "conv2d" in n or n.startswith("mean")]
    assert len(windows) > 10
    for name in windows:
        text = kernels[name].script()
        assert "T.parallel" in text and "T.vectorized" in text and "T.unroll" in text, name
        assert 'scope="local"' in text, name  # the accumulators of the tile


def test_the_weights_are_packed_once_at_build_time(net):
    kernels = prim_funcs(net[2].mod)
    convs = [n for n in kernels if "conv2d" in n]
    assert all(n.endswith(PACKED_SUFFIX) for n in convs)
    assert not any(PACKING_SUFFIX in n for n in kernels)  # run at build time, then dropped
    assert PACKING_SUFFIX not in net[2].mod["main"].script(show_meta=False)
    for name in convs:
        text = kernels[name].script()
        assert "layout_rewrite_preproc" not in text, name
        # the weight comes in panels, [channel blocks, kh, kw, input channels, vectors, lanes]
        # (unit axes dropped), under the name of the packed copy RewriteLayout made
        weight = next(b for b in param_buffers(kernels[name]) if str(b.name).endswith("_global"))
        assert int(weight.shape[-1]) in (4, 8, 16), name


def test_the_network_agrees_with_pytorch(net):
    model, x, built = net
    with torch.no_grad():
        expected = model(x).numpy()
    assert np.abs(expected).max() > 0.1  # activations that did not vanish
    np.testing.assert_allclose(np.asarray(built(x.numpy())), expected, rtol=1e-4, atol=1e-4)


def _window(width, channels, lanes):
    return Window(None, [], [], [], [], width, channels, lanes, "float32")


@pytest.mark.parametrize(
    ("width", "channels", "lanes", "registers", "tile"),
    [
        (56, 64, 16, 32, (14, 2)),  # ResNet-18's first stage, AVX-512
        (7, 512, 16, 32, (7, 2)),  # its last stage
        (1, 512, 16, 32, (1, 4)),  # the mean over H and W
        (56, 64, 8, 16, (4, 2)),  # AVX2: 16 registers, 4 left spare (14 x 1 spilled)
        (7, 512, 8, 16, (7, 1)),
    ],
)
def test_the_rule_takes_the_largest_tile_that_fits_the_registers(
    width, channels, lanes, registers, tile
):
    assert rule_tile(_window(width, channels, lanes), registers) == tile
    assert fits_registers(*tile, registers)
    assert not fits_registers(tile[0] + 1, tile[1], registers) or width % (tile[0] + 1)


def test_a_matmul_is_not_a_window_kernel():
    from tvm import te

    a = te.placeholder((64, 64), name="A")
    b = te.placeholder((64, 64), name="B")
    k = te.reduce_axis((0, 64), name="k")
    c = te.compute((64, 64), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    mod = tvm().IRModule({"main": te.create_prim_func([a, b, c])})
    with pytest.raises(NotWindow, match="not a 4-D"):
        find_window(Schedule(mod), 16)


def test_a_depthwise_convolution_reads_its_input_in_the_tile_without_a_padded_copy():
    # memory-bound: the padding's bounds checks go into the tile's loads, no copy of the input
    from model_support import mobilenet_block

    model = mobilenet_block()
    x = torch.randn(1, 32, 28, 28, generator=torch.Generator().manual_seed(2))
    built = build_module(import_model(model, x), persist=False)
    kernels = prim_funcs(built.mod)
    depthwise = [n for n, f in kernels.items() if "group_conv2d" in f.script()]
    assert len(depthwise) == 1
    text = kernels[depthwise[0]].script()
    assert "T.parallel" in text and "T.vectorized" in text and 'scope="local"' in text
    blocks = re.findall(r'T\.sblock\("([^"]+)"\)', text)
    assert not [b for b in blocks if "pad" in b.lower()], blocks
    assert "T.if_then_else" in text  # the bounds checks, in the tile's loads
    with torch.no_grad():
        expected = model(x).numpy()
    np.testing.assert_allclose(np.asarray(built(x.numpy())), expected, rtol=1e-4, atol=1e-4)


def _depthwise_block(channels: int, stride: int):
    """MobileNet v1's depthwise layer: 3x3 depthwise conv, batch norm, ReLU (eval mode)."""
    from torch import nn

    torch.manual_seed(channels + stride)
    block = nn.Sequential(
        nn.Conv2d(channels, channels, 3, stride, 1, groups=channels, bias=False),
        nn.BatchNorm2d(channels),
        nn.ReLU(),
    ).eval()
    with torch.no_grad():  # a batch norm that is not the identity: its fold into the epilogue shows
        block[1].running_mean.uniform_(-0.5, 0.5)
        block[1].running_var.uniform_(0.5, 2.0)
        block[1].weight.uniform_(0.5, 1.5)
        block[1].bias.uniform_(-0.5, 0.5)
    return block


@pytest.mark.parametrize(
    ("channels", "size", "stride"),
    [(32, 112, 1), (64, 112, 2), (512, 14, 1), (1024, 7, 1)],  # MobileNet v1's, at 224 x 224
)
def test_a_depthwise_convolution_streams_rows_and_shares_loads_across_its_window(
    channels, size, stride
):
    block = _depthwise_block(channels, stride)
    x = torch.randn(1, channels, size, size, generator=torch.Generator().manual_seed(3))
    built = build_module(import_model(block, x), persist=False)
    kernels = prim_funcs(built.mod)
    (name,) = [n for n, f in kernels.items() if "group_conv2d" in f.script()]
    text = kernels[name].script()
    # one kernel: the batch norm's scale folded into the weights, its shift and the ReLU
    # written back from the accumulators
    assert [n for n in kernels if "transpose" not in n] == [name]
    assert "T.max(" in text
    # pixels outermost in the parallel loop, then channel blocks: each core streams its rows
    parallel = re.search(r"for (\w+) in T\.parallel", text).group(1)
    assert parallel.startswith("nn_yy_xx_0_ff_0"), parallel
    # the kernel's columns unrolled beside the tile's pixels, whose loads they share
    assert re.search(r"for rx in T\.unroll\(T\.int64\(3\)\)", text), text
    with torch.no_grad():
        expected = block(x).numpy()
    np.testing.assert_allclose(np.asarray(built(x.numpy())), expected, rtol=1e-4, atol=1e-4)


def test_no_layout_kernel_runs_before_the_first_or_after_the_last_convolution(net):
    # The first convolution reads the NCHW image into its padded copy itself
    # (compilation/input_layout.py); the head (mean over the image in NHWC, the transpose back
    # to NCHW, the flatten) is a view of the pooled tensor, not a kernel.
    from mlc_jupyter.measure import profile_kernels

    run = {k.name for k in profile_kernels(net[2], runs=1).kernels}  # what the VM calls
    order = re.findall(r"R\.call_tir\((\w+),", net[2].mod["main"].script(show_meta=False))
    called = [n for n in (name.removesuffix(PACKED_SUFFIX) for name in order) if n in run]
    assert "conv2d" in called[0], called
    assert not [name for name in called if "transpose" in name or "layout" in name], called


def _conv_window(groups, kernel=3, size=14):
    """The window of a convolution of a 64-channel NHWC input as a CPU build legalises it."""
    from torch import nn

    from mlc_jupyter.compilation.default_schedule import legalize_and_fuse
    from mlc_jupyter.compilation.targets import resolve_target

    conv = nn.Conv2d(64, 64, kernel, padding=kernel // 2, groups=groups, bias=False).eval()
    fused = legalize_and_fuse(
        import_model(conv, torch.randn(1, 64, size, size)).mod, resolve_target()
    )
    (func,) = [f for gv, f in prim_funcs(fused).items() if "conv2d" in gv]
    sch = Schedule(tvm().IRModule({"main": func.with_attr("global_symbol", "main")}))
    return sch, find_window(sch, 8)


def test_a_depthwise_tile_one_vector_wide_takes_two_on_avx2():
    sch, window = _conv_window(groups=64)
    assert rule_tile(window, 16) == (7, 1)
    assert depthwise_rule_tile(sch, window, 16) == (7, 2)  # 14 accumulators, 2 registers spare
    dense_sch, dense = _conv_window(groups=1)
    assert depthwise_rule_tile(dense_sch, dense, 16) == rule_tile(dense, 16)


def test_a_depthwise_tile_keeps_half_of_avx512_s_registers_for_the_input_columns():
    sch, window = _conv_window(groups=64)
    rows, vectors = rule_tile(window, 32)
    assert rows * vectors > 16  # the rule's tile fills the registers with accumulators
    assert depthwise_rule_tile(sch, window, 32) == (7, 2)  # the largest of at most 16
    dense_sch, dense = _conv_window(groups=1)
    assert depthwise_rule_tile(dense_sch, dense, 32) == rule_tile(dense, 32)


def test_small_convolutions_tile_pixels_across_rows_on_avx2_and_a_depthwise_one_keeps_rows():
    # 14 pixels a row allow 7 x 1 vector at best with 16 registers; the image's 196 pixels as one
    # axis allow 4 x 2 (8 accumulators, each broadcast feeding two FMAs); the 64 input channels
    # are reduced 4 at a time
    sch, dense = _conv_window(groups=1, kernel=1)
    assert rule_decisions(sch, dense, 16) == Decisions(4, 2, 4, across_rows=True)
    assert not rule_decisions(sch, dense, 32).across_rows  # 32 registers: a row tiles well
    sch, depthwise = _conv_window(groups=64)
    assert rule_decisions(sch, depthwise, 16) == Decisions(7, 2)  # rows share their loads
    # 7 x 7: 4 x 2 across rows although 4 does not divide 49 (the last tile's pixel predicated)
    sch, small = _conv_window(groups=1, kernel=1, size=7)
    assert rule_decisions(sch, small, 16) == Decisions(4, 2, 4, across_rows=True)


@pytest.mark.parametrize(
    ("kernel", "stride", "size"),
    [(3, 2, 28), (1, 1, 14), (1, 2, 28), (3, 1, 7), (1, 1, 7)],  # ResNet's and MobileNet's
)
@host_has_avx2
def test_a_convolution_tiled_across_rows_on_avx2_agrees_with_pytorch(
    kernel, stride, size, monkeypatch
):
    from torch import nn

    # the direct convolution's tile, also where the default build would take Winograd (3x3/1)
    monkeypatch.setattr(winograd, "TILE_FROM", {4: 10**6, 2: 10**6})
    clear_cache(disk=False)  # and prepare the model again under that rule
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(32, 64, kernel, stride=stride, padding=kernel // 2), nn.ReLU()
    ).eval()
    x = torch.randn(1, 32, size, size, generator=torch.Generator().manual_seed(2))
    built = build_module(import_model(model, x), AVX2_TARGET, persist=False)
    (name,) = [n for n in prim_funcs(built.mod) if "conv2d" in n]
    text = prim_funcs(built.mod)[name].script()
    assert f"T.int64({(size // stride) ** 2})" in text, text  # the pixels as one axis
    with torch.no_grad():
        expected = model(x).numpy()
    np.testing.assert_allclose(np.asarray(built(x.numpy())), expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(("channels", "unroll"), [(64, 4), (3, 3)])
def test_a_convolution_unrolls_its_reduction_over_input_channels(channels, unroll):
    from torch import nn

    # a weight from memory streams faster with more of its rows' loads in flight
    # (bench/bench_conv_unroll.py); 7x7 output: the direct convolution
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(channels, 128, 3, padding=1), nn.ReLU()).eval()
    x = torch.randn(1, channels, 7, 7, generator=torch.Generator().manual_seed(2))
    built = build_module(import_model(model, x), persist=False)
    (kernel,) = prim_funcs(built.mod, "conv2d").values()
    assert re.search(rf"for rc_1 in T.unroll\(T.int64\({unroll}\)\)", kernel.script())
    with torch.no_grad():
        expected = model(x).numpy()
    np.testing.assert_allclose(np.asarray(built(x.numpy())), expected, rtol=1e-4, atol=1e-4)
