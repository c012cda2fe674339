"""The convolution space: the kernels it takes, that every variant it samples computes the
convolution (direct, and Winograd for the kernels a build makes so), the register check, and
that tuning picks it for a model's convolutions."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
import torch
from torch import nn

from mlc_jupyter.compilation import winograd
from mlc_jupyter.compilation.conv_schedule import (
    ORDERS,
    fits_registers,
    schedule_window,
    vector_unit,
)
from mlc_jupyter.compilation.default_schedule import legalize_and_fuse
from mlc_jupyter.compilation.winograd import rule_decisions_for, schedule_winograd
from mlc_jupyter.errors import TuneError
from mlc_jupyter.models import import_model
from mlc_jupyter.tune.options import tuning_target
from mlc_jupyter.tune.spaces.choice import CONV_SPACE_KEY, WINOGRAD_SPACE_KEY, choose_spaces
from mlc_jupyter.tune.spaces.conv import (
    is_window_like,
    space_generator,
    winograd_space_generator,
)
from mlc_jupyter.tune.spaces.register_fit import TileFitsRegisters, sampled_tile
from mlc_jupyter.tvm_compat import Schedule, metaschedule, param_buffers, prim_func_type, tvm


@pytest.fixture(scope="module")
def target():
    return tuning_target(None)


def _fused_kernels(block, channels, size, target):
    example = torch.randn(1, channels, size, size)
    fused = legalize_and_fuse(import_model(block, example).mod, target)
    return {
        gv.name_hint: tvm().IRModule({"main": f.with_attr("global_symbol", "main")})
        for gv, f in fused.functions_items()
        if isinstance(f, prim_func_type())
    }


@pytest.fixture(scope="module")
def kernels(target):
    """The fused kernels of a small convolution block, as a CPU model build makes them (12 x 12:
    too small for Winograd, a direct convolution)."""
    torch.manual_seed(0)
    block = nn.Sequential(
        nn.Conv2d(8, 32, 3, 1, 1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(32 * 6 * 6, 10),
    ).eval()  # fmt: skip
    return _fused_kernels(block, 8, 12, target)


@pytest.fixture(scope="module")
def winograd_kernel(target):
    """A 3x3 stride-1 convolution with its bias and ReLU that a build makes a Winograd kernel."""
    torch.manual_seed(0)
    block = nn.Sequential(nn.Conv2d(16, 32, 3, 1, 1), nn.ReLU()).eval()  # whole AVX-512 vectors
    return _named(_fused_kernels(block, 16, 16, target), "fused_conv2d_winograd")


def _named(kernels, prefix):
    return next(mod for name, mod in kernels.items() if name.startswith(prefix))


def test_convolutions_and_pooling_are_window_kernels_and_a_dense_layer_is_not(kernels, target):
    assert is_window_like(_named(kernels, "fused_conv2d"), target)
    assert is_window_like(_named(kernels, "max_pool2d"), target)
    assert not is_window_like(_named(kernels, "fused_matmul"), target)


def _run(mod, target, inputs, out_shape):
    _tvm = tvm()
    runtime = _tvm.compile(mod, target=target).mod
    out = _tvm.runtime.empty(out_shape, "float32")
    runtime["main"](*[_tvm.runtime.tensor(x) for x in inputs], out)
    return out.numpy()


def test_every_variant_under_several_draws_computes_the_convolution(kernels, target):
    mod = _named(kernels, "fused_conv2d")
    rng = np.random.default_rng(0)
    shapes = [[int(d) for d in b.shape] for b in param_buffers(mod["main"])]
    inputs = [rng.uniform(0.5, 1.5, size=s).astype("float32") for s in shapes[:-1]]
    expected = _run(mod, target, inputs, shapes[-1])
    unit = vector_unit(target)
    for order in ORDERS:
        for seed in (1, 2, 3):
            sch = Schedule(mod, seed=seed)
            schedule_window(sch, unit, order=order)
            assert "T.unroll" in sch.mod.script() and "T.vectorized" in sch.mod.script()
            got = _run(sch.mod, target, inputs, shapes[-1])
            np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def test_tiles_that_would_spill_are_rejected(kernels, target):
    sch = Schedule(_named(kernels, "fused_conv2d"), seed=1)
    schedule_window(sch, vector_unit(target))
    rows, vectors = sampled_tile(sch)
    need = rows * vectors + vectors + 1  # the accumulators, the weight vectors, a broadcast
    # more than 16 registers: none kept spare; 16 (AVX2): 4 kept spare
    assert TileFitsRegisters(partial(fits_registers, registers=max(need, 17))).apply(sch)
    assert not TileFitsRegisters(partial(fits_registers, registers=need - 1)).apply(sch)
    assert need <= 12 or not TileFitsRegisters(partial(fits_registers, registers=16)).apply(sch)


def test_metaschedule_samples_one_design_space_per_order(kernels, target):
    mod = _named(kernels, "fused_conv2d")
    context = metaschedule().TuneContext(
        mod=mod, target=target, space_generator=space_generator(mod, target), task_name="main"
    )
    assert len(context.generate_design_space()) == len(ORDERS)


def test_tuning_gives_convolutions_the_conv_space_by_default(kernels, target):
    mods = [_named(kernels, "fused_conv2d"), _named(kernels, "fused_matmul")]
    spaces = choose_spaces(mods, target, "default")
    assert spaces.names[0] == "conv" and spaces.names[1] != "conv"
    assert CONV_SPACE_KEY in spaces.key
    assert choose_spaces(mods[:1], target, "metaschedule").names == ["metaschedule"]


def test_the_conv_space_refuses_a_kernel_it_cannot_schedule(kernels, target):
    with pytest.raises(TuneError, match="--space conv needs a CPU kernel whose one reduction"):
        choose_spaces([_named(kernels, "fused_matmul")], target, "conv")


def test_a_winograd_kernel_gets_the_convolution_spaces_winograd_variant(winograd_kernel, target):
    spaces = choose_spaces([winograd_kernel], target, "default")
    assert spaces.names == ["conv-winograd"] and WINOGRAD_SPACE_KEY in spaces.key
    assert choose_spaces([winograd_kernel], target, "conv").names == ["conv-winograd"]


def test_every_winograd_draw_computes_the_convolution(winograd_kernel, target):
    rng = np.random.default_rng(1)
    shapes = [[int(d) for d in b.shape] for b in param_buffers(winograd_kernel["main"])]
    inputs = [rng.uniform(-1, 1, size=s).astype("float32") for s in shapes[:-1]]
    default = Schedule(winograd_kernel)
    unit = vector_unit(target)
    schedule_winograd(
        default,
        unit.lanes,
        rule_decisions_for(winograd_kernel["main"], unit.lanes, unit.registers, 2),
    )
    expected = _run(default.mod, target, inputs, shapes[-1])
    fits = partial(fits_registers, registers=unit.registers)
    for seed in (1, 2, 3):
        sch = Schedule(winograd_kernel, seed=seed)
        schedule_winograd(sch, unit.lanes)
        assert TileFitsRegisters(fits).apply(sch) or not fits(*sampled_tile(sch))
        got = _run(sch.mod, target, inputs, shapes[-1])
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_the_default_winograd_schedule_is_a_point_of_the_space(winograd_kernel, target):
    from mlc_jupyter.compilation.default_schedule import _cpu_schedule

    _, trace = _cpu_schedule(winograd_kernel["main"], target)
    replayed = Schedule(winograd_kernel)
    trace.apply_to_schedule(replayed, remove_postproc=True)
    context = metaschedule().TuneContext(
        mod=winograd_kernel,
        target=target,
        space_generator=winograd_space_generator(winograd_kernel, target),
        task_name="main",
    )
    (space,) = context.generate_design_space()
    kinds = [inst.kind.name for inst in space.trace.insts]
    assert kinds == [inst.kind.name for inst in replayed.trace.insts][: len(kinds)]


def test_a_register_tile_across_rows_of_tiles_is_drawn_for_a_job_of_all_the_rows_only(target):
    # a 7x7 layer's four tiles a row: the space's register tile may span two rows of tiles, a
    # draw that gives it a job of one row (a guarded, half-empty tile) is refused before it is
    # built; one with a job of all the rows computes the convolution
    torch.manual_seed(0)
    block = nn.Sequential(nn.Conv2d(32, 32, 3, 1, 1), nn.ReLU()).eval()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(winograd, "TILE_FROM", {4: 28, 2: 7})
        mod = _named(_fused_kernels(block, 32, 7, target), "fused_conv2d_winograd")
    unit = vector_unit(target)
    assert winograd.choices(mod["main"], unit.lanes).rows[-1] == 8
    context = metaschedule().TuneContext(
        mod=mod,
        target=target,
        space_generator=winograd_space_generator(mod, target),
        task_name="main",
    )
    rng = np.random.default_rng(2)
    shapes = [[int(d) for d in b.shape] for b in param_buffers(mod["main"])]
    inputs = [rng.uniform(-1, 1, size=s).astype("float32") for s in shapes[:-1]]
    default = Schedule(mod)
    schedule_winograd(
        default, unit.lanes, rule_decisions_for(mod["main"], unit.lanes, unit.registers, 2)
    )
    expected = _run(default.mod, target, inputs, shapes[-1])
    accepted = {}
    for block_rows in (1, 4):
        sch = Schedule(mod)
        schedule_winograd(sch, unit.lanes, winograd.Decisions(8, 1, 1, block_rows, 1))
        accepted[block_rows] = all(p.apply(sch) for p in context.space_generator.postprocs)
        if accepted[block_rows]:
            got = _run(sch.mod, target, inputs, shapes[-1])
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    assert accepted == {1: False, 4: True}
