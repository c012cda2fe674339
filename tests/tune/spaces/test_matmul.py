"""The BLIS-like space: which workloads it takes, and that every variant it samples computes C = A B."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

from mlc_jupyter.compilation.conv_schedule import fits_registers, vector_unit
from mlc_jupyter.compilation.matmul_schedule import VARIANTS, schedule_matmul
from mlc_jupyter.tune.options import tuning_target
from mlc_jupyter.tune.spaces.matmul import is_matmul_like, space_generator
from mlc_jupyter.tune.spaces.register_fit import TileFitsRegisters, sampled_tile
from mlc_jupyter.tvm_compat import Schedule, tvm


def _module(func):
    return tvm().IRModule({"main": func.with_attr("global_symbol", "main")})


def _te(shape_a, shape_b, compute, out_shape, reduce_extent):
    from tvm import te

    a = te.placeholder(shape_a, name="A")
    b = te.placeholder(shape_b, name="B")
    k = te.reduce_axis((0, reduce_extent), name="k")
    c = te.compute(out_shape, lambda *idx: te.sum(compute(a, b, k, *idx), axis=k), name="C")
    return _module(te.create_prim_func([a, b, c]))


def matmul(m, n, k):
    return _te((m, k), (k, n), lambda a, b, r, i, j: a[i, r] * b[r, j], (m, n), k)


def matmul_transposed_b(m, n, k):  # nn.Linear's weight layout: C = A @ W.T
    return _te((m, k), (n, k), lambda a, b, r, i, j: a[i, r] * b[j, r], (m, n), k)


def batch_matmul(batch, m, n, k):
    return _te((batch, m, k), (batch, k, n),
               lambda a, b, r, s, i, j: a[s, i, r] * b[s, r, j], (batch, m, n), k)  # fmt: skip


def elementwise_add(n):
    from tvm import te

    a = te.placeholder((n, n), name="A")
    b = te.placeholder((n, n), name="B")
    c = te.compute((n, n), lambda i, j: a[i, j] + b[i, j], name="C")
    return _module(te.create_prim_func([a, b, c]))


def row_sum(n):
    from tvm import te

    a = te.placeholder((n, n), name="A")
    k = te.reduce_axis((0, n), name="k")
    c = te.compute((n,), lambda i: te.sum(a[i, k], axis=k), name="C")
    return _module(te.create_prim_func([a, c]))


@pytest.fixture(scope="module")
def target():
    return tuning_target(None)


def _reference(mod, inputs):
    a, b = inputs
    names = [p.name for p in mod["main"].params]
    del names
    return a, b


def _check(mod, target, reference, shapes, seeds=(1, 2, 3)):
    """Every variant, under several random draws of its sizes, computes ``reference``."""
    rng = np.random.default_rng(0)
    inputs = [rng.uniform(-1, 1, size=s).astype("float32") for s in shapes]
    expected = reference(*inputs)
    _tvm = tvm()
    unit = vector_unit(target)
    for variant in VARIANTS:
        for seed in seeds:
            sch = Schedule(mod, seed=seed)
            schedule_matmul(sch, variant, unit)
            runtime = _tvm.compile(sch.mod, target=target).mod
            args = [_tvm.runtime.tensor(x) for x in inputs]
            out = _tvm.runtime.empty(expected.shape, "float32")
            runtime["main"](*args, out)
            np.testing.assert_allclose(out.numpy(), expected, rtol=1e-4, atol=1e-4)


def test_matmul_variants_compute_the_product(target):
    _check(matmul(64, 96, 80), target, lambda a, b: a @ b, [(64, 80), (80, 96)])


def mm_relu(n):
    """The book's matmul + ReLU, as ``te`` builds it (its intermediate a root-block buffer)."""
    from tvm import te

    a = te.placeholder((n, n), name="A")
    b = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    y = te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="Y")
    c = te.compute((n, n), lambda i, j: te.max(y[i, j], 0.0), name="C")
    return _module(te.create_prim_func([a, b, c]))


def test_an_elementwise_epilogue_is_fused_into_the_write_back(target):
    mod = mm_relu(128)
    assert is_matmul_like(mod, target)
    _check(mod, target, lambda a, b: np.maximum(a @ b, 0), [(128, 128), (128, 128)], seeds=(1,))
    sch = Schedule(mod, seed=1)
    schedule_matmul(sch, VARIANTS[0], vector_unit(target))
    assert "T.max(Y_local" in sch.mod.script()  # ReLU applied as the accumulators are stored


def test_the_books_mm_relu_in_its_own_spelling_is_matmul_like(target):
    from build_support import mm_relu as book_mm_relu

    assert is_matmul_like(_module(book_mm_relu()["mm_relu"]), target)


def test_transposed_weights_and_batches_are_matmul_like(target):
    assert is_matmul_like(matmul_transposed_b(32, 64, 48), target)
    _check(matmul_transposed_b(32, 64, 48), target, lambda a, w: a @ w.T,
           [(32, 48), (64, 48)], seeds=(1,))  # fmt: skip
    assert is_matmul_like(batch_matmul(2, 16, 32, 24), target)
    _check(batch_matmul(2, 16, 32, 24), target, lambda a, b: a @ b,
           [(2, 16, 24), (2, 24, 32)], seeds=(1,))  # fmt: skip


def test_other_workloads_keep_the_default_space(target):
    assert not is_matmul_like(elementwise_add(64), target)
    assert not is_matmul_like(row_sum(64), target)
    lanes = vector_unit(target).lanes
    assert not is_matmul_like(matmul(64, lanes * 4 + 1, 64), target)  # columns not whole vectors
    assert not is_matmul_like(matmul(2, 64, 64), target)  # a matrix-vector product, not a matmul


def test_micro_kernels_that_do_not_fit_the_registers_are_rejected(target):
    mod = matmul(64, 128, 64)
    unit = vector_unit(target)
    sch = Schedule(mod, seed=1)
    schedule_matmul(sch, VARIANTS[0], unit)
    rows, vectors = sampled_tile(sch)
    assert rows * vectors >= 2
    assert not TileFitsRegisters(partial(fits_registers, registers=1)).apply(sch)
    needed = rows * vectors + vectors + 1  # accumulators, B vectors, the broadcast
    assert TileFitsRegisters(partial(fits_registers, registers=max(32, needed))).apply(sch)


def test_metaschedule_samples_the_space(target):
    from mlc_jupyter.tvm_compat import metaschedule

    ms = metaschedule()
    mod = matmul(64, 64, 64)
    context = ms.TuneContext(mod=mod, target=target, space_generator=space_generator(mod, target),
                             task_name="main")  # fmt: skip
    spaces = context.generate_design_space()
    assert len(spaces) == len(VARIANTS)


def test_a_models_weight_is_left_to_rewrite_layout_and_the_kernel_tunes(target, tmp_path):
    """``%mlc_import``'s kernels mark their weights layout-free: MetaSchedule's ``RewriteLayout``
    packs such a ``B`` at build time, so the space does not pack it a second time (TVM refused
    that in every candidate, and a transformer's matmuls kept their default schedules)."""
    from mlc_jupyter.compilation import build_module
    from mlc_jupyter.compilation.default_schedule import LAYOUT_FREE_ATTR
    from mlc_jupyter.tune import tune
    from mlc_jupyter.tvm_compat import metaschedule

    ms = metaschedule()
    weighted = _module(matmul(64, 128, 64)["main"].with_attr(LAYOUT_FREE_ATTR, [1]))
    context = ms.TuneContext(mod=weighted, target=target, task_name="main",
                             space_generator=space_generator(weighted, target))  # fmt: skip
    assert len(context.generate_design_space()) == 1  # unpacked: RewriteLayout packs B
    result = tune(weighted, trials=8, per_iter=8, work_dir=tmp_path, seed=0)
    assert result.spaces == {"main": "matmul"} and result.n_records == 8
    rng = np.random.default_rng(0)
    a, b = (rng.uniform(-1, 1, size=(64, s)).astype("float32") for s in (64, 128))
    c = np.zeros((64, 128), dtype="float32")
    build_module(result.mod, target)(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
