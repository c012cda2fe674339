"""Contract of tvm_compat/prefetch.py: a loop annotated for it starts with prefetches of the rows
of the next weight panel (the next jobs', or the job's own next one), the kernel computes what it
did, and a kernel whose jobs all read the whole weight at once gets none. A failure names what TVM
changed."""

from __future__ import annotations

import platform
import re

import numpy as np
import pytest

from mlc_jupyter import tvm_compat
from mlc_jupyter.tvm_compat.prefetch import prefetch_next_panels

ROWS, DEPTH, PANELS, LANES = 4, 32, 4, 16


def _panel_product(jobs: str, read=-1, locality=None):
    """``out = a @ w`` (``a`` ROWS x DEPTH, ``w`` DEPTH x PANELS*LANES), its parallel jobs one
    row by one panel of ``w`` each (``"panel"``), one row by all of ``w`` panel after panel
    (``"row"``) or one row by all of ``w`` at once (``"row, all panels at once"``), the
    reduction annotated (``"panel, reduction in two loops"``: a job of ``"panel"`` whose reduction
    runs in two loops, the inner one annotated, as a convolution's kernel rows and input channels
    do); ``locality``: the caches the loop asks its prefetches into."""
    tvm = tvm_compat.tvm()
    te = tvm.te
    a = te.placeholder((ROWS, DEPTH), name="a")
    w = te.placeholder((DEPTH, PANELS * LANES), name="w")
    k = te.reduce_axis((0, DEPTH), name="k")
    out = te.compute((ROWS, PANELS * LANES), lambda i, j: te.sum(a[i, k] * w[k, j], axis=k))
    sch = tvm_compat.Schedule(te.create_prim_func([a, w, out]))
    block = tvm_compat.get_block(sch, "compute")
    i, j, k = sch.get_loops(block)
    panel, lane = sch.split(j, [PANELS, LANES])
    outer, inner = sch.split(k, [None, 4])
    if jobs == "panel, reduction in two loops":
        first, outer = sch.split(outer, [2, None])
        sch.reorder(panel, i, first, outer, inner, lane)
        sch.parallel(sch.fuse(panel, i))
    elif jobs == "panel":
        sch.reorder(panel, i, outer, inner, lane)
        sch.parallel(sch.fuse(panel, i))
    elif jobs == "row":
        sch.reorder(i, panel, outer, inner, lane)
        sch.parallel(i)
    else:
        sch.reorder(i, outer, panel, inner, lane)
        sch.parallel(i)
    sch.vectorize(lane)
    sch.annotate(outer, tvm_compat.PREFETCH_ANNOTATION, read)
    if locality is not None:
        sch.annotate(outer, tvm_compat.PREFETCH_LOCALITY_ANNOTATION, locality)
    return tvm.IRModule({"main": sch.mod["main"].with_attr("global_symbol", "main")})


def _assert_computes_the_product(mod):
    """The module built by the CPU pipeline (the pass first) computes ``a @ w``."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((ROWS, DEPTH)).astype("float32")
    w = rng.standard_normal((DEPTH, PANELS * LANES)).astype("float32")
    target = tvm_compat.tvm().target.Target({"kind": "llvm"})
    lib = tvm_compat.compile(mod, target, tvm_compat.register_tiles_pipeline())
    out = tvm_compat.tensor(np.zeros((ROWS, PANELS * LANES), "float32"))
    lib["main"](tvm_compat.tensor(a), tvm_compat.tensor(w), out)
    np.testing.assert_allclose(out.numpy(), a @ w, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("jobs", ["panel", "panel, reduction in two loops"])
def test_the_jobs_of_a_panel_prefetch_the_next_panel_row_by_row_and_compute_the_same(jobs):
    mod = _panel_product(jobs)
    text = prefetch_next_panels()(mod)["main"].script()
    # each iteration of the annotated loop: one row (one vector, one cache line) of the panel
    # that the job ROWS jobs later reads (clamped to the last job); the ROWS jobs of a panel
    # take DEPTH / ROWS of its rows each, one per iteration. A reduction loop above the
    # annotated one is no panel of its own: the rows spread over the iterations of both.
    assert text.count("T.prefetch") == 1, text
    job = f"T.min(j_0_i_fused + {ROWS}, {PANELS * ROWS - 1}) // {ROWS} * {LANES}"
    assert job in text, text
    if jobs == "panel":
        row = f"T.min(j_0_i_fused % {ROWS} * {DEPTH // ROWS} + k_0, {DEPTH - 1})"
        assert f"w[{row} % {DEPTH}, {job}]" in text, text
    _assert_computes_the_product(mod)


def test_a_job_that_reads_panel_after_panel_prefetches_its_own_next_panel():
    mod = _panel_product("row")
    text = prefetch_next_panels()(mod)["main"].script()
    # the DEPTH rows of the job's next panel (after its last, the next job's first: here the
    # same, as every job reads every panel) spread over the annotated loop's DEPTH / 4
    # iterations: four rows each
    assert text.count("T.prefetch") == 4, text
    assert f"(j_0 + 1) % {PANELS} * {LANES}]" in text, text
    _assert_computes_the_product(mod)


def test_jobs_that_each_read_the_whole_weight_at_once_get_no_prefetch():
    mod = _panel_product("row, all panels at once")
    assert "T.prefetch" not in prefetch_next_panels()(mod)["main"].script()


def test_an_annotation_whose_value_is_no_read_index_asks_for_nothing():
    # a trace from elsewhere may carry the annotation with any value: the build goes on without
    # prefetches instead of failing inside TVM's lowering
    mod = _panel_product("panel", read="the weight")
    assert "T.prefetch" not in prefetch_next_panels()(mod)["main"].script()
    _assert_computes_the_product(mod)


@pytest.mark.parametrize(("asked", "locality"), [(None, 3), (1, 1), (2, 3), ("L2", 3)])
def test_a_loop_sends_its_prefetches_into_the_caches_it_names(asked, locality):
    # every cache unless the loop asks for the second level and beyond (a tuning space's choice);
    # a value it may not ask for (a trace from elsewhere may carry any) keeps every cache
    mod = _panel_product("row", locality=asked)
    text = prefetch_next_panels()(mod)["main"].script()
    assert re.findall(r"T\.prefetch\(.*\), 0, (\d), 1\)", text) == [str(locality)] * 4, text
    assert tvm_compat.PREFETCH_LOCALITY_ANNOTATION not in text
    _assert_computes_the_product(mod)
    if platform.machine() in ("x86_64", "AMD64"):
        target = tvm_compat.tvm().target.Target({"kind": "llvm"})
        lib = tvm_compat.compile(mod, target, tvm_compat.register_tiles_pipeline())
        asm = str(getattr(lib, "mod", lib).inspect_source("asm"))
        assert ("prefetcht2" in asm) == (locality == 1) and ("prefetcht0" in asm) == (locality == 3)
