"""Chapter 2 (TensorIR): every TVMScript listing of the book runs through ``%%tir`` and computes."""

from __future__ import annotations

import numpy as np
from course_support import build, call, gone_listing_error, run_listing

from mlc_jupyter import tvm_compat

RNG = np.random.default_rng(2)


def _mm_relu_inputs():
    a = RNG.random((128, 128), dtype="float32")
    b = RNG.random((128, 128), dtype="float32") - 0.5
    return a, b, np.maximum(a @ b, 0)


def _run_mm_relu(mod):
    a, b, expected = _mm_relu_inputs()
    c = call(build(mod), "mm_relu", a, b, np.zeros((128, 128), "float32"))[-1]
    np.testing.assert_allclose(c, expected, rtol=1e-5, atol=1e-5)


def _book_transform(mod, jfactor):
    """The book's §2.4.5 exercise ``transform`` (split j, reorder, reverse_compute_at)."""
    sch = tvm_compat.Schedule(mod)
    block_y = sch.get_sblock("Y", func_name="mm_relu")
    _i, j, k = sch.get_loops(block_y)
    j0, j1 = sch.split(j, factors=[None, jfactor])
    sch.reorder(j0, k, j1)
    sch.reverse_compute_at(sch.get_sblock("C", "mm_relu"), j0)
    return sch, block_y


def test_figure_2_2_1_vector_add_adds_two_vectors(shell):
    main = run_listing(shell, "ch2_fig_vector_add")
    a, b = RNG.random(128, dtype="float32"), RNG.random(128, dtype="float32")
    c = call(build(main), "main", a, b, np.zeros(128, "float32"))[-1]
    np.testing.assert_allclose(c, a + b)


def test_mm_relu_computes_relu_of_a_matmul_with_noalias_honoured(shell):
    mod = run_listing(shell, "ch2_mm_relu")
    assert shell.user_ns["MyModule"] is mod
    assert bool(mod["mm_relu"].attrs["tirx.noalias"])
    _run_mm_relu(mod)


def test_mm_relu_after_the_books_schedule_steps_gives_the_same_numbers(shell):
    mod = run_listing(shell, "ch2_mm_relu")
    sch, block_y = _book_transform(mod, jfactor=4)
    sch.decompose_reduction(block_y, sch.get_loops(block_y)[2])
    assert "Y_init" in sch.mod.script()
    _run_mm_relu(sch.mod)
    _run_mm_relu(_book_transform(mod, jfactor=8)[0].mod)


def test_axis_remap_sugar_gives_the_same_program_as_the_long_form(shell):
    long_form = run_listing(shell, "ch2_mm_relu")
    sugar = run_listing(shell, "ch2_mm_relu_axis_remap_sugar")
    assert tvm_compat.structural_equal(sugar, long_form)
    _run_mm_relu(sugar)


def test_module_with_two_functions_runs_mm_then_relu(shell):
    mod = run_listing(shell, "ch2_two_functions")
    lib = build(mod)
    a, b, expected = _mm_relu_inputs()
    y = call(lib, "mm", a, b, np.zeros((128, 128), "float32"))[-1]
    c = call(lib, "relu", y, np.zeros((128, 128), "float32"))[-1]
    np.testing.assert_allclose(y, a @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(c, expected, rtol=1e-5, atol=1e-5)


def test_elementwise_add_exercise_gives_the_books_sixteens(shell):
    mod = run_listing(shell, "ch2_elementwise_add")
    a = np.arange(16).reshape(4, 4)
    b = np.arange(16, 0, -1).reshape(4, 4)
    c = call(build(mod), "add", a, b, np.empty((4, 4), dtype=np.int64))[-1]
    np.testing.assert_array_equal(c, np.full((4, 4), 16))


def test_parallel_vectorize_unroll_example_still_adds(shell):
    mod = run_listing(shell, "ch2_add_parallel_vectorize_unroll")
    sch = tvm_compat.Schedule(mod)
    i, j = sch.get_loops(sch.get_sblock("C", func_name="add"))
    i0, i1 = sch.split(i, factors=[2, 2])
    sch.parallel(i0)
    sch.unroll(i1)
    sch.vectorize(j)
    script = sch.mod.script()
    assert "T.parallel(2)" in script and "T.unroll(2)" in script and "T.vectorized(4)" in script
    a = np.arange(16).reshape(4, 4)
    b = np.arange(16, 0, -1).reshape(4, 4)
    c = call(build(sch.mod), "add", a, b, np.empty((4, 4), dtype=np.int64))[-1]
    np.testing.assert_array_equal(c, a + b)


def test_bmm_relu_target_module_computes_batched_matmul_relu(shell):
    mod = run_listing(shell, "ch2_bmm_relu_target")
    a = RNG.random((16, 128, 128), dtype="float32")
    b = RNG.random((16, 128, 128), dtype="float32") - 0.5
    c = call(build(mod), "bmm_relu", a, b, np.zeros((16, 128, 128), "float32"))[-1]
    np.testing.assert_allclose(c, np.maximum(a @ b, 0), rtol=1e-4, atol=1e-4)


def test_exercise_3_schedule_reaches_the_books_target_module(shell):
    target = run_listing(shell, "ch2_bmm_relu_target")
    # The exercise's starting point is cut off in the book; this is its obvious completion.
    run_listing(shell, "ch2_bmm_relu")
    sch = tvm_compat.Schedule(shell.user_ns["MyBmmRelu"])
    block_y = sch.get_sblock("Y", func_name="bmm_relu")
    n, _i, j, k = sch.get_loops(block_y)
    j0, j1 = sch.split(j, factors=[None, 8])
    k0, k1 = sch.split(k, factors=[None, 4])
    sch.reorder(j0, k0, k1, j1)
    sch.parallel(n)  # before C joins the nest: a parallel loop needs compact dataflow
    sch.unroll(k1)
    block_c = sch.get_sblock("C", "bmm_relu")
    sch.reverse_compute_at(block_c, j0)
    sch.vectorize(sch.get_loops(block_c)[-1])
    y_init = sch.decompose_reduction(block_y, k0)
    sch.vectorize(sch.get_loops(y_init)[-1])
    tvm_compat.assert_structural_equal(sch.mod, target)


def test_side_by_side_lnumpy_figure_is_refused_at_the_builtin_max(shell):
    err = gone_listing_error(shell, "ch2_mm_relu_lnumpy_side_by_side", "tir")
    assert err.source_line.strip() == "C[i, j] = max(Y[i, j], 0)"
