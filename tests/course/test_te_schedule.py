"""Legacy TE schedules in course mode, on TensorIR: each stage primitive against the TensorIR
schedule it maps to (the lowered functions structurally equal, the built kernels equal to NumPy),
and the old entry points (``te.create_schedule``, ``tvm.lower``, ``tvm.build(s, args)``) typed in
plain cells."""

# ruff: noqa: N806, RUF059 - tensors are A, B, C and unpacked loops named as the TE tutorials do

from __future__ import annotations

import numpy as np
import pytest
from IPython.utils.capture import capture_output

tvm = pytest.importorskip("tvm")
te = tvm.te

from mlc_jupyter import tvm_compat  # noqa: E402
from mlc_jupyter.course import build, create_schedule, lower  # noqa: E402
from mlc_jupyter.errors import TEScheduleError  # noqa: E402

RNG = np.random.default_rng(11)
N = 64


def _matmul():
    A = te.placeholder((N, N), name="A")
    B = te.placeholder((N, N), name="B")
    k = te.reduce_axis((0, N), name="k")
    C = te.compute((N, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C


def _tensorir(tensors):
    """A TensorIR schedule of what ``te.create_prim_func`` makes of ``tensors``."""
    return tvm_compat.Schedule(te.create_prim_func(tensors))


def _same(s, args, sch):
    """``tvm.lower(s, args)`` is the TensorIR schedule's function."""
    lowered = lower(s, args)["main"]
    tvm_compat.assert_structural_equal(lowered, sch.mod["main"])


def _numbers(s, args, expected, inputs):
    """The TE schedule built as the old tvm.build did computes ``expected``."""
    lib = build(s, args, "llvm")
    out = np.zeros(expected.shape, dtype="float32")
    lib["default_function"](*inputs, out)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)


def _matmul_inputs():
    a = RNG.random((N, N), dtype="float32")
    b = RNG.random((N, N), dtype="float32")
    return (a, b), a @ b


@pytest.mark.parametrize("how", ["factor", "nparts"])
def test_split_is_tensorirs_split_with_the_factor_inside_or_the_parts_outside(how):
    A, B, C = _matmul()
    s = create_schedule(C.op)
    i, j = C.op.axis
    kwargs = {"factor": 8} if how == "factor" else {"nparts": 4}
    jo, ji = s[C].split(j, **kwargs)
    sch = _tensorir([A, B, C])
    li, lj, lk = sch.get_loops(sch.get_sblock("C"))
    sch.split(lj, [None, 8] if how == "factor" else [4, None])
    _same(s, [A, B, C], sch)
    _numbers(s, [A, B, C], *reversed(_matmul_inputs()))


def test_reorder_is_tensorirs_reorder_of_the_iter_vars_loops():
    A, B, C = _matmul()
    s = create_schedule(C.op)
    i, j = C.op.axis
    (k,) = C.op.reduce_axis
    s[C].reorder(i, k, j)
    sch = _tensorir([A, B, C])
    li, lj, lk = sch.get_loops(sch.get_sblock("C"))
    sch.reorder(li, lk, lj)
    _same(s, [A, B, C], sch)
    _numbers(s, [A, B, C], *reversed(_matmul_inputs()))


def test_tile_fuse_and_parallel_are_tensorirs_split_reorder_fuse_and_parallel():
    A, B, C = _matmul()
    s = create_schedule(C.op)
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], 16, 8)
    fused = s[C].fuse(io, jo)
    s[C].parallel(fused)
    sch = _tensorir([A, B, C])
    li, lj, _ = sch.get_loops(sch.get_sblock("C"))
    lio, lii = sch.split(li, [None, 16])
    ljo, lji = sch.split(lj, [None, 8])
    sch.reorder(lio, ljo, lii, lji)
    sch.parallel(sch.fuse(lio, ljo))
    _same(s, [A, B, C], sch)
    _numbers(s, [A, B, C], *reversed(_matmul_inputs()))


def test_vectorize_and_unroll_are_tensorirs():
    A, B, C = _matmul()
    s = create_schedule(C.op)
    i, j = C.op.axis
    (k,) = C.op.reduce_axis
    jo, ji = s[C].split(j, factor=8)
    s[C].reorder(i, jo, k, ji)
    s[C].vectorize(ji)
    ko, ki = s[C].split(k, factor=4)
    s[C].unroll(ki)
    sch = _tensorir([A, B, C])
    li, lj, lk = sch.get_loops(sch.get_sblock("C"))
    ljo, lji = sch.split(lj, [None, 8])
    sch.reorder(li, ljo, lk, lji)
    sch.vectorize(lji)
    _, lki = sch.split(lk, [None, 4])
    sch.unroll(lki)
    _same(s, [A, B, C], sch)
    _numbers(s, [A, B, C], *reversed(_matmul_inputs()))


def _matmul_relu():
    A, B, C = _matmul()
    D = te.compute((N, N), lambda i, j: te.max(C[i, j], 0.0), name="D")
    return A, B, C, D


def test_compute_at_is_tensorirs_compute_at_under_the_consumers_loop():
    A, B, C, D = _matmul_relu()
    s = create_schedule(D.op)
    i, j = D.op.axis
    s[C].compute_at(s[D], i)
    sch = _tensorir([A, B, D])
    di, _ = sch.get_loops(sch.get_sblock("D"))
    sch.compute_at(sch.get_sblock("C"), di, preserve_unit_loops=True)
    _same(s, [A, B, D], sch)
    (a, b), ab = _matmul_inputs()
    _numbers(s, [A, B, D], np.maximum(ab, 0), (a, b))


def test_after_compute_at_the_stages_iter_vars_are_its_loops_under_the_attach_point():
    A, B, C, D = _matmul_relu()
    s = create_schedule(D.op)
    s[C].compute_at(s[D], D.op.axis[0])
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=4)
    sch = _tensorir([A, B, D])
    di, _ = sch.get_loops(sch.get_sblock("D"))
    block = sch.get_sblock("C")
    sch.compute_at(block, di, preserve_unit_loops=True)
    sch.split(sch.get_loops(block)[-1], [None, 4])
    _same(s, [A, B, D], sch)


def test_compute_inline_is_tensorirs_compute_inline():
    A = te.placeholder((N, N), name="A")
    B = te.compute((N, N), lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute((N, N), lambda i, j: B[i, j] + 1.0, name="C")
    s = create_schedule(C.op)
    s[B].compute_inline()
    sch = _tensorir([A, C])
    sch.compute_inline(sch.get_sblock("B"))
    _same(s, [A, C], sch)
    a = RNG.random((N, N), dtype="float32")
    _numbers(s, [A, C], a * 2 + 1, (a,))


def test_bind_is_tensorirs_bind_to_the_thread_axis_tag():
    A = te.placeholder((1024,), name="A")
    B = te.compute((1024,), lambda i: A[i] + 1.0, name="B")
    s = create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=64)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    sch = _tensorir([A, B])
    lbx, ltx = sch.split(sch.get_loops(sch.get_sblock("B"))[0], [None, 64])
    sch.bind(lbx, "blockIdx.x")
    sch.bind(ltx, "threadIdx.x")
    _same(s, [A, B], sch)
    lib = build(s, [A, B], tvm.target.Target({"kind": "cuda", "arch": "sm_80"}))
    assert "threadIdx.x" in lib.imported_modules[0].get_source()  # a CUDA kernel, GPU or not


def test_cache_read_is_tensorirs_cache_read_and_its_stage_computes_at():
    A, B, C = _matmul()
    s = create_schedule(C.op)
    AA = s.cache_read(A, "global", [C])
    i, j = C.op.axis
    s[AA].compute_at(s[C], i)
    sch = _tensorir([A, B, C])
    block = sch.get_sblock("C")
    cached = sch.cache_read(block, 0, "global")
    sch.compute_at(cached, sch.get_loops(block)[0], preserve_unit_loops=True)
    _same(s, [A, B, C], sch)
    assert len(AA.op.axis) == 2  # the cache block's own loops, under i
    _numbers(s, [A, B, C], *reversed(_matmul_inputs()))


def test_cache_write_computes_in_the_cache_and_the_stage_copies_out_as_te_did():
    """The classic blocking tutorial: ``CC = s.cache_write(C, ...)``; ``s[C]`` is the copy,
    tiled; ``s[CC]`` computes at its loop, its own axes reordered."""
    A, B, C = _matmul()
    s = create_schedule(C.op)
    CC = s.cache_write(C, "global")
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], 16, 16)
    s[CC].compute_at(s[C], jo)
    ic, jc = CC.op.axis
    (kc,) = CC.op.reduce_axis
    s[CC].reorder(kc, ic, jc)
    s[CC].vectorize(jc)
    sch = _tensorir([A, B, C])
    compute = sch.get_sblock("C")
    copy = sch.cache_write(compute, 0, "global")
    ci, cj = sch.get_loops(copy)
    cio, cii = sch.split(ci, [None, 16])
    cjo, cji = sch.split(cj, [None, 16])
    sch.reorder(cio, cjo, cii, cji)
    sch.compute_at(compute, cjo, preserve_unit_loops=True)
    li, lj, lk = sch.get_loops(compute)[-3:]
    sch.reorder(lk, li, lj)
    sch.vectorize(lj)
    _same(s, [A, B, C], sch)
    _numbers(s, [A, B, C], *reversed(_matmul_inputs()))


def test_args_listing_only_the_inputs_compute_the_rest_into_buffers_and_scratch():
    """The blog lowers and builds its schedule with args [A, B, E]: C, D and F are buffers of
    the function; the build still computes F (into a tensor the module holds), so its time is
    the chain's."""
    A, B, C = _matmul()
    D = te.compute((N, N), lambda i, j: te.exp(C[i, j] * 0.01), name="D")
    s = create_schedule([C.op, D.op])
    func = lower(s, [A, B])["main"]
    assert [str(p.name) for p in func.params] == ["A", "B"]
    assert sorted(str(b.name) for b in func.body.block.alloc_buffers) == ["C", "D"]
    lib = build(s, [A, B], target="llvm")
    (a, b), ab = _matmul_inputs()
    lib["__tvm_main__"](a, b)
    (scratch,) = lib.scratch_tensors("default_function")
    np.testing.assert_allclose(scratch.numpy(), np.exp(ab * 0.01), rtol=1e-4)
    res = lib.time_evaluator("__tvm_main__", tvm.cpu(), number=2)(
        tvm.runtime.tensor(a), tvm.runtime.tensor(b)
    )
    assert res.mean > 0


def test_a_split_away_iter_var_and_a_primitive_without_counterpart_say_what_to_do():
    A, B, C = _matmul()
    s = create_schedule(C.op)
    i, j = C.op.axis
    s[C].split(j, factor=8)
    with pytest.raises(TEScheduleError, match="j was split") as err:
        s[C].reorder(j, i)
    assert "loops split returned" in err.value.hint
    with pytest.raises(TEScheduleError, match="compute_root has no TensorIR counterpart"):
        s[C].compute_root()
    with pytest.raises(TEScheduleError, match="rfactor") as err:
        s.rfactor(C, C.op.reduce_axis[0])
    assert "s.sch.rfactor" in err.value.hint
    with pytest.raises(TEScheduleError, match="one of factor= and nparts="):
        s[C].split(i)


# -- in course mode, typed as the old tutorials type it ----------------------------------------


TE_CELL = """import numpy as np
import tvm
from tvm import te

n = 64
A = te.placeholder((n, n), name="A")
B = te.placeholder((n, n), name="B")
k = te.reduce_axis((0, n), name="k")
C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
s: te.Schedule = te.create_schedule(C.op)
i, j = C.op.axis
jo, ji = s[C].split(j, factor=8)
s[C].reorder(i, jo, k, ji)
s[C].vectorize(ji)
mod = tvm.lower(s, [A, B, C])
rt_lib = tvm.build(s, [A, B, C], target="llvm")
a = np.random.rand(n, n).astype("float32")
b = np.random.rand(n, n).astype("float32")
c = tvm.nd.array(np.zeros((n, n), dtype="float32"))
rt_lib["default_function"](tvm.nd.array(a), tvm.nd.array(b), c)
"""


def _run(shell, text):
    with capture_output() as captured:
        result = shell.run_cell(text, store_history=True)
    return result, captured


def test_a_te_schedule_cell_runs_as_typed_and_the_trace_reads_with_its_names(shell):
    result, captured = _run(shell, TE_CELL)
    assert result.success, (result.error_in_exec, captured.stdout)
    ns = shell.user_ns
    np.testing.assert_allclose(ns["c"].numpy(), ns["a"] @ ns["b"], rtol=1e-4)
    assert [str(p.name) for p in ns["mod"]["main"].params] == ["A", "B", "C"]
    with capture_output() as shown:
        shell.run_line_magic("mlc_trace", "s --static")
    text = shown.outputs[0].data["text/plain"]
    assert "sch.split(loop=j, factors=[None, 8]" in text, text
    assert "sch.reorder(i, jo, k, ji)" in text and "sch.vectorize(loop=ji)" in text, text


def test_the_interactive_stepper_of_a_te_schedule_starts_from_its_tensorir_steps(shell):
    assert _run(shell, TE_CELL)[0].success
    widget = shell.run_line_magic("mlc_schedule", "s")
    code = widget.session.code
    assert "sch.split(loop=j, factors=[None, 8]" in code and "sch.vectorize(loop=ji)" in code
    tvm_compat.assert_structural_equal(widget.run.sch.mod, shell.user_ns["s"].mod)
    assert widget.apply_code("sch.parallel(i)")
    with pytest.raises(Exception, match="is a schedule"):
        shell.run_cell_magic("mlc_schedule", "s", "sch.parallel(i)\n")


def test_a_primitive_without_counterpart_fails_at_its_line_with_what_to_do(shell):
    assert _run(shell, TE_CELL)[0].success
    result, captured = _run(shell, "x = 1\ns[C].compute_root()\ny = 2\n")
    assert isinstance(result.error_in_exec, TEScheduleError)
    out = captured.stdout
    assert "TEScheduleError: line 2, column 1: compute_root has no TensorIR counterpart" in out
    assert "hint: a TensorIR block stays at the root" in out and "Traceback" not in out
    assert shell.user_ns["x"] == 1 and "y" not in shell.user_ns
