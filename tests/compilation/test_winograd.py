"""Winograd convolutions: ResNet-18's 3x3 stride-1 layers computed with F(2x2, 3x3) and
F(4x4, 3x3) agree with PyTorch within 1e-4 of the output's scale, and the default build picks
Winograd where it gains (the large layers) and the direct convolution elsewhere."""

from __future__ import annotations

import dataclasses
import itertools
import math
import re

import numpy as np
import pytest
import torch
from model_support import torch_seed

from mlc_jupyter.compilation import build_module, clear_cache, resolve_target, winograd
from mlc_jupyter.compilation.conv_schedule import PREFETCH_FROM_BYTES, vector_unit
from mlc_jupyter.compilation.matmul_schedule import rule_k_unroll
from mlc_jupyter.models import import_model
from mlc_jupyter.tvm_compat import (
    Schedule,
    ir_module_type,
    param_buffers,
    prim_func_type,
    register_tiles_pipeline,
    tvm,
    winograd_matrices,
)
from mlc_jupyter.tvm_compat.prefetch import PREFETCH_LOCALITIES, prefetch_next_panels

#: ResNet-18's 3x3 stride-1 convolutions: (output size, channels).
RESNET18_SHAPES = ((56, 64), (28, 128), (14, 256), (7, 512))


def resnet18_3x3_layers():
    """One 3x3 stride-1 convolution (batch norm, ReLU, a residual add) at each of ResNet-18's
    sizes, joined by the stride-2 convolutions between them: 1x64x56x56 in."""
    from torch import nn

    class Block(nn.Module):
        def __init__(self, channels: int) -> None:
            super().__init__()
            self.conv = nn.Conv2d(channels, channels, 3, 1, 1, bias=False)
            self.bn = nn.BatchNorm2d(channels)

        def forward(self, x):
            return torch.relu(self.bn(self.conv(x)) + x)

    torch_seed(5)
    layers = []
    for index, (_, channels) in enumerate(RESNET18_SHAPES):
        if index:
            layers.append(nn.Conv2d(channels // 2, channels, 3, 2, 1, bias=False))
        layers.append(Block(channels))
    model = nn.Sequential(*layers)
    for layer in model.modules():
        if isinstance(layer, nn.BatchNorm2d):
            layer.running_mean.uniform_(-0.1, 0.1)
            layer.running_var.uniform_(0.5, 1.5)
    return model.eval()


@pytest.fixture(scope="module")
def layers():
    model = resnet18_3x3_layers()
    x = torch.randn(1, 64, 56, 56, generator=torch.Generator().manual_seed(6))
    with torch.no_grad():
        expected = model(x).numpy()
    return x, expected, import_model(model, x)


@pytest.fixture
def unprepared():
    """Builds that prepare the model again (the import prepared it with the default rule)."""
    clear_cache(disk=False)
    yield
    clear_cache(disk=False)


def _winograd_kernels(built):
    return sorted(
        gv.name_hint
        for gv, f in built.mod.functions_items()
        if isinstance(f, prim_func_type()) and winograd.tile_of(f) is not None
    )


@pytest.mark.parametrize("m", [2, 4])
def test_every_resnet18_3x3_shape_agrees_with_pytorch(layers, m, monkeypatch, unprepared):
    x, expected, imported = layers
    monkeypatch.setattr(winograd, "TILE_FROM", {m: 1, 6 - m: 10**6})
    monkeypatch.setattr(winograd, "MAX_WEIGHT_BYTES", {4: 2**40, 2: 2**40})
    built = build_module(imported, persist=False)
    kernels = _winograd_kernels(built)
    assert len(kernels) == len(RESNET18_SHAPES), kernels
    tiles = {winograd.tile_of(built.mod[name]) for name in kernels}
    assert tiles == {m}
    got = np.asarray(built(x.numpy()))
    assert np.abs(expected).max() > 0.1  # activations that did not vanish
    assert np.abs(got - expected).max() <= 1e-4 * np.abs(expected).max()


def test_the_default_build_takes_winograd_for_the_large_layers_only(layers, unprepared):
    x, expected, imported = layers
    built = build_module(imported, persist=False)
    tiles = sorted(winograd.tile_of(built.mod[name]) for name in _winograd_kernels(built))
    # 56x56 and 28x28: F(4x4); 14x14x256: F(2x2) (F(4x4)'s weight would be 9 MiB); 7x7: direct
    assert tiles == [2, 4, 4]
    got = np.asarray(built(x.numpy()))
    assert np.abs(got - expected).max() <= 1e-4 * np.abs(expected).max()


def test_a_convolution_with_a_large_weight_prefetches_its_next_panel_and_nothing_else(
    layers, unprepared
):
    """A batch-1 model reads a large weight from memory at every call: each convolution of the
    default build, direct or Winograd, whose weight is over the threshold reads the weight's
    next panel ahead as it computes; the others, whose weights stay in the caches, do not."""
    _, _, imported = layers
    built = build_module(imported, persist=False)
    convs = {
        gv.name_hint: f
        for gv, f in built.mod.functions_items()
        if isinstance(f, prim_func_type()) and "conv2d" in gv.name_hint
    }
    assert len(convs) == 2 * len(RESNET18_SHAPES) - 1
    large = set()
    for name, func in convs.items():
        text = prefetch_next_panels()(tvm().IRModule({"main": func}))["main"].script()
        weight = param_buffers(func)[1]  # after the data: the packed weight
        size = math.prod(int(d) for d in weight.shape) * 4
        prefetched = set(re.findall(r"T\.prefetch\(T\.address_of\((\w+)\[", text))
        assert prefetched == ({str(weight.name)} if size > PREFETCH_FROM_BYTES else set()), name
        large |= {name} if prefetched else set()
    assert 0 < len(large) < len(convs)  # both kinds in the stack


@pytest.mark.parametrize("m", [2, 4])
def test_the_transform_matrices_compute_a_correlation(m):
    a, b, g = winograd_matrices(m, 3)
    rng = np.random.default_rng(m)
    d, w = rng.random(m + 2), rng.random(3)
    direct = np.array([d[i : i + 3] @ w for i in range(m)])
    np.testing.assert_allclose(a.T @ ((g @ w) * (b.T @ d)), direct, rtol=1e-12)


@pytest.mark.parametrize(("size", "channels"), RESNET18_SHAPES)
def test_the_default_products_unroll_the_input_channels_as_the_matmul_rule_does(size, channels):
    # the products are tiles x C times C x K matmuls: their reduction is unrolled by the same
    # rule as the matmul micro-kernel's k (a run of broadcast-FMA steps without a loop test)
    decisions = winograd.rule_decisions(4, [1, 2, 4], 16, channels)
    assert decisions.unroll == rule_k_unroll(channels) > 1
    assert channels % decisions.unroll == 0 and decisions.unroll <= winograd.MAX_UNROLL
    assert (decisions.rows, decisions.vectors) == (4, 2)  # AVX2: 8 lanes, 16 registers


def test_a_race_rates_each_way_of_computing_the_layers_on_the_same_work(
    layers, monkeypatch, unprepared
):
    """Whole-model FLOPs count a Winograd kernel as the direct convolution it computes, so a build
    that takes Winograd on more layers (a tuned one) reads faster, not slower, in GFLOP/s, and the
    runtimes raced beside it are rated on the model's work (they took the first TVM row's count)."""
    from mlc_jupyter.measure.timer import estimate_flops, model_flops

    _, _, imported = layers
    counts = {}
    never = 10**6  # an output size no layer reaches: that tile is never taken
    for way, ways in (
        ("F(2x2)", {2: 1, 4: never}),
        ("F(4x4)", {4: 1, 2: never}),
        ("direct", {4: never, 2: never}),
    ):
        monkeypatch.setattr(winograd, "TILE_FROM", ways)
        monkeypatch.setattr(winograd, "MAX_WEIGHT_BYTES", {4: 2**40, 2: 2**40})
        clear_cache(disk=False)
        built = build_module(imported, persist=False)
        kernels = _winograd_kernels(built)
        assert len(kernels) == (0 if way == "direct" else len(RESNET18_SHAPES))
        for name in kernels:  # each does less arithmetic than the convolution it stands for
            assert estimate_flops(built.mod, name) < winograd.flops_as_written(built.mod[name])
        counts[way] = model_flops(built.mod)
    direct = counts["direct"]
    for flops in counts.values():
        assert flops == pytest.approx(direct, rel=0.01)


def _te_winograd_kernel(size, channels, m, row_tile=1):
    """A 3x3 stride-1 NHWC convolution (padding 1) by Winograd with a ReLU, as TensorIR."""
    _tvm = tvm()
    te = _tvm.te
    data = te.placeholder((1, size, size, channels), name="data")
    weight = te.placeholder((m + 2, m + 2, channels, channels), name="weight")
    out = winograd.winograd_compute(data, weight, (1, 1, 1, 1), winograd.Plan(m, row_tile))
    func = te.create_prim_func([data, weight, _tvm.topi.nn.relu(out)])
    return ir_module_type()({"main": func.with_attr("global_symbol", "main")})


@pytest.mark.parametrize(("size", "m", "row_tile"), [(14, 2, 1), (12, 4, 1), (26, 2, 7), (7, 2, 1)])
def test_each_way_of_splitting_the_work_between_the_cores_computes_the_convolution(
    size, m, row_tile
):
    # the tuning space samples the jobs: one row of output tiles or all of them, all the output
    # channels or half, and register tiles up to the largest that divides a job's tiles (a 7x7
    # layer's job of all rows takes one spanning two rows of tiles); every one of them is the
    # same convolution
    channels = 32  # whole vectors that split in two on AVX-512 and AVX2 alike
    target = resolve_target("llvm")
    unit = vector_unit(target)
    mod = _te_winograd_kernel(size, channels, m, row_tile)
    rng = np.random.default_rng(size)
    x = rng.uniform(-1, 1, (1, size, size, channels)).astype("float32")
    w = rng.uniform(-1, 1, (3, 3, channels, channels)).astype("float32")
    with torch.no_grad():
        expected = torch.relu(
            torch.nn.functional.conv2d(
                torch.from_numpy(x).permute(0, 3, 1, 2),
                torch.from_numpy(w).permute(3, 2, 0, 1),
                padding=1,
            )
        ).permute(0, 2, 3, 1)
    rule = winograd.rule_decisions_for(mod["main"], unit.lanes, unit.registers, 2)
    options = winograd.choices(mod["main"], unit.lanes)
    assert options.block_rows == [1, -(-size // m)] and options.k_splits == [1, 2]
    tried_rows = set()
    for block_rows, k_split in itertools.product(options.block_rows, options.k_splits):
        fitting = [r for r in options.rows if winograd.fits_job(mod["main"], r, block_rows)]
        for rows in {min(rule.rows, fitting[-1]), fitting[-1]}:
            tried_rows.add(rows)
            sch = Schedule(mod)
            decisions = dataclasses.replace(rule, rows=rows, block_rows=block_rows, k_split=k_split)
            winograd.schedule_winograd(sch, unit.lanes, decisions)
            lib = tvm().compile(sch.mod, target=target)
            out = tvm().runtime.empty(expected.shape, "float32")
            lib["main"](
                tvm().runtime.tensor(x),
                tvm().runtime.tensor(winograd.transformed_weight(w, m)),
                out,
            )
            np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-4, atol=1e-4)
    assert max(tried_rows) == options.rows[-1]


@pytest.mark.parametrize(
    ("size", "channels", "m", "cores", "jobs"),
    [
        (56, 64, 4, 2, (1, 1)),  # the weight fits a core's cache: each job a row of tiles
        (28, 128, 4, 2, (7, 2)),  # it does not: each core half of the channels, every row
        (14, 256, 2, 2, (7, 2)),
        (7, 512, 2, 2, (4, 2)),
        (7, 512, 2, 16, (1, 2)),  # more cores than halves: rows of tiles by halves
    ],
)
def test_each_core_reads_its_part_of_a_large_transformed_weight(size, channels, m, cores, jobs):
    # a batch-1 layer reads its whole transformed weight at every call: where it is larger than
    # a core's cache, the jobs split the output channels, so no core reads all of it
    mod = _te_winograd_kernel(size, channels, m)
    decisions = winograd.rule_decisions_for(mod["main"], 16, 32, cores)  # AVX-512
    assert (decisions.block_rows, decisions.k_split) == jobs
    assert winograd.fits_job(mod["main"], decisions.rows, decisions.block_rows)
    assert decisions.rows <= winograd.rule_rows(32)


@pytest.mark.parametrize(
    ("size", "channels", "cores", "rows", "locality"),
    [(7, 512, 2, 8, 1), (7, 512, 16, 4, 1), (14, 256, 2, 7, 3), (14, 256, 16, 7, 1)],
)
def test_a_small_layer_gets_a_register_tile_across_rows_and_its_weight_in_the_second_level(
    size, channels, cores, rows, locality
):
    # a 7x7 layer has four tiles a row: a register tile of one row reuses each weight vector it
    # loads four times; a job of all the rows gets one of two rows of tiles, a job of one row
    # (more cores than halves of the channels) keeps one row's. Either way the register tile
    # passes over each slice of the weight once or twice: the next slice is prefetched into the
    # second-level cache, where a 14x14 layer's (seven passes) goes into every cache, but for a
    # job of one row of tiles (one pass)
    mod = _te_winograd_kernel(size, channels, 2)
    decisions = winograd.rule_decisions_for(mod["main"], 16, 32, cores)
    assert (decisions.rows, decisions.prefetch_locality) == (rows, locality)


def test_a_large_transformed_weight_is_prefetched_into_the_caches_the_decisions_name():
    # the tuning space samples where the next slice of a large transformed weight goes: every
    # cache (the default) or the second level and beyond (a 7x7 layer's products reuse each
    # weight vector for 16 tiles only, and stream it in faster than the first level lets them)
    size, channels = 7, 512
    mod = _te_winograd_kernel(size, channels, 2)
    target = resolve_target("llvm")
    unit = vector_unit(target)
    rule = winograd.rule_decisions_for(mod["main"], unit.lanes, unit.registers, 2)
    assert PREFETCH_LOCALITIES == (3, 1)
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 1, (1, size, size, channels)).astype("float32")
    w = rng.uniform(-1, 1, (3, 3, channels, channels)).astype("float32")
    expected = None
    for locality in PREFETCH_LOCALITIES:
        sch = Schedule(mod)
        winograd.schedule_winograd(
            sch, unit.lanes, dataclasses.replace(rule, prefetch_locality=locality)
        )
        text = prefetch_next_panels()(sch.mod)["main"].script()
        found = set(re.findall(r"T\.prefetch\(.*\), 0, (\d), 1\)", text))
        assert found == {str(locality)}, found
        lib = tvm().compile(sch.mod, target=target)
        out = tvm().runtime.empty((1, size, size, channels), "float32")
        lib["main"](
            tvm().runtime.tensor(x),
            tvm().runtime.tensor(winograd.transformed_weight(w, 2)),
            out,
        )
        expected = out.numpy() if expected is None else expected
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    ("tile_cols", "registers", "row_tile"),
    [(13, 32, 7), (14, 32, 7), (56, 32, 8), (4, 32, 4), (13, 16, 4), (14, 16, 4)],
)
def test_a_row_of_tiles_is_padded_for_a_whole_register_tile(tile_cols, registers, row_tile):
    # a 26x26 layer's 13 tiles a row (13 is prime) get a 7-tile register tile over 14, not a
    # one-tile one over 13: the products' micro-kernel needs rows to reuse each weight vector
    assert winograd.rule_row_tile(tile_cols, registers) == row_tile
    mod = _te_winograd_kernel(2 * tile_cols, 16, 2, row_tile)
    assert winograd.tile_grid(mod["main"])[1] % row_tile == 0
    assert winograd.rule_decisions_for(mod["main"], 16, registers, 2).rows == row_tile


@pytest.mark.parametrize(("size", "m"), [(26, 2), (52, 4)])
def test_a_layer_whose_row_of_tiles_is_prime_agrees_with_pytorch(size, m, unprepared):
    # 13 tiles a row: the build pads each row (to 14 for a 7-tile register tile on AVX-512),
    # computes the padded tiles and leaves their outputs out; the residual add still fuses
    from torch import nn

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(32, 32, 3, 1, 1)

        def forward(self, x):
            return torch.relu(self.conv(x) + x)

    torch_seed(7)
    model = Block().eval()
    x = torch.randn(1, 32, size, size, generator=torch.Generator().manual_seed(8))
    with torch.no_grad():
        expected = model(x).numpy()
    row_tile = winograd.rule_row_tile(13, vector_unit(resolve_target("llvm")).registers)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(winograd, "TILE_FROM", {m: 1, 6 - m: 10**6})
        built = build_module(import_model(model, x), persist=False)
    (kernel,) = _winograd_kernels(built)
    assert winograd.tile_of(built.mod[kernel]) == m
    assert winograd.tile_grid(built.mod[kernel]) == (13, -(-13 // row_tile) * row_tile)
    assert row_tile > 1 and 13 % row_tile
    got = np.asarray(built(x.numpy()))
    assert np.abs(got - expected).max() <= 1e-4 * np.abs(expected).max()


def test_each_unrolled_transform_row_keeps_only_its_own_sum():
    """A transform's rows are written as one expression picked by the row index; once the
    row loop is unrolled, the lowered kernel holds each row's sum alone (a choice left in, for
    every element, carried all the rows through the lowering and into LLVM: a slower build of
    the same machine code)."""
    target = resolve_target("llvm")
    unit = vector_unit(target)
    sch = Schedule(_te_winograd_kernel(14, 32, 4))
    rule = winograd.rule_decisions_for(sch.mod["main"], unit.lanes, unit.registers, 2)
    winograd.schedule_winograd(sch, unit.lanes, rule)
    _tvm = tvm()
    bound = _tvm.tirx.transform.BindTarget(target.with_host(target))(sch.mod)
    lower, _, _ = _tvm.tirx.get_tir_pipeline(register_tiles_pipeline())
    text = lower(bound)["main"].script()
    assert "T.Select" not in text
    # what picks one of two values is left only in the padding (and the arguments' unpacking)
    picks = [line for line in text.splitlines() if "if_then_else" in line]
    assert [line for line in picks if "type_index" not in line and winograd.PAD not in line] == []
