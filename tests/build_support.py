"""Modules from the MLC book shared by the build / measure tests (parsed through ``cells``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mlc_jupyter.cells import parse_script
from mlc_jupyter.tvm_compat import Schedule, get_block, prim_func_type, tvm

LISTINGS = Path(__file__).parent / "course" / "listings"
COURSE_TARGET = "llvm -num-cores=2"

# The book's chapter 2 steps on mm_relu (course spelling: get_block).
#: A kernel with a scalar parameter (``n``) beside its buffers.
SCALE_BY_N = """
@T.prim_func
def scale(a: T.handle, b: T.handle, n: T.int32):
    A = T.match_buffer(a, (64,), "float32")
    B = T.match_buffer(b, (64,), "float32")
    for i in range(64):
        with T.block("B"):
            vi = T.axis.spatial(64, i)
            B[vi] = A[vi] * T.Cast("float32", n)
"""

MM_RELU_STEPS = """block_Y = sch.get_block("Y", func_name="mm_relu")
i, j, k = sch.get_loops(block_Y)
j0, j1 = sch.split(j, factors=[None, 4])
sch.reorder(j0, k, j1)
block_C = sch.get_block("C", "mm_relu")
sch.reverse_compute_at(block_C, j0)
block_Y_init = sch.decompose_reduction(block_Y, k)"""


def prim_funcs(mod: Any, containing: str = "") -> dict[str, Any]:
    """A module's TIR kernels by name (those whose name contains ``containing``)."""
    return {
        gv.name_hint: f
        for gv, f in mod.functions_items()
        if isinstance(f, prim_func_type()) and containing in gv.name_hint
    }


def listing(name: str, obj: str) -> Any:
    """Parse a book listing (course spelling) and return the object it defines."""
    return parse_script((LISTINGS / name).read_text(), {}, kind="tir").objects[obj]


def matmul(n: int) -> Any:
    """An ``n``x``n`` fp32 matmul PrimFunc (``C = A @ B``), the tuning tests' workload."""
    from tvm import te

    a = te.placeholder((n, n), name="A")
    b = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    c = te.compute((n, n), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    return te.create_prim_func([a, b, c])


def through_local_buffer(elements: int) -> Any:
    """``C = A * 2 + 1`` with ``A * 2`` held in a ``local`` buffer of ``elements`` floats, as a
    register tile's accumulators are (an IRModule with one kernel, ``main``)."""
    te = tvm().te
    a = te.placeholder((elements,), name="A")
    b = te.compute((elements,), lambda i: a[i] * 2.0, name="B")
    c = te.compute((elements,), lambda i: b[i] + 1.0, name="C")
    func = te.create_prim_func([a, c]).with_attr("global_symbol", "main")
    sch = Schedule(tvm().IRModule({"main": func}))
    sch.set_scope(get_block(sch, "B"), 0, "local")
    return sch.mod


def mm_relu() -> Any:
    return listing("ch2_mm_relu.py", "MyModule")


def transform(mod: Any, jfactor: int) -> Any:
    """The book's §2.4 exercise: split j by ``jfactor``, reorder, move C under j0."""
    sch = Schedule(mod)
    block_y = sch.get_sblock("Y", func_name="mm_relu")
    _i, j, k = sch.get_loops(block_y)
    j0, j1 = sch.split(j, factors=[None, jfactor])
    sch.reorder(j0, k, j1)
    sch.reverse_compute_at(sch.get_sblock("C", "mm_relu"), j0)
    return sch.mod


def vector_add_gpu() -> Any:
    """Book §6.1.3: the vector add bound to blockIdx.x / threadIdx.x."""
    sch = Schedule(listing("ch6_vector_add.py", "MyModuleVecAdd"))
    (i,) = sch.get_loops(sch.get_sblock("C"))
    i0, i1 = sch.split(i, [None, 128])
    sch.bind(i0, "blockIdx.x")
    sch.bind(i1, "threadIdx.x")
    return sch.mod


def window_sum_gpu() -> Any:
    """Book §6.1.4: window sum with a shared-memory stage and cooperative fetching."""
    sch = Schedule(listing("ch6_window_sum.py", "MyModuleWindowSum"))
    block_c = sch.get_sblock("C")
    (i,) = sch.get_loops(block_c)
    i0, i1 = sch.split(i, [None, 128])
    sch.bind(i0, "blockIdx.x")
    sch.bind(i1, "threadIdx.x")
    a_shared = sch.cache_read(block_c, read_buffer_index=0, storage_scope="shared")
    sch.compute_at(a_shared, i1)
    ax = sch.get_loops(a_shared)[-1]
    _ax0, ax1 = sch.split(ax, [None, 128])
    sch.bind(ax1, "threadIdx.x")
    return sch.mod


def blocking(sch: Any, tile_local_y, tile_local_x, tile_block_y, tile_block_x, tile_k) -> Any:
    """Book §6.1.5: local blocking of the 1024^3 matmul (each thread keeps a tile of C)."""
    block_c = sch.get_sblock("C")
    c_local = sch.cache_write(block_c, 0, "local")
    i, j, k = sch.get_loops(block=block_c)
    i0, i1, i2 = sch.split(loop=i, factors=[None, tile_block_y, tile_local_y])
    j0, j1, j2 = sch.split(loop=j, factors=[None, tile_block_x, tile_local_x])
    k0, k1 = sch.split(loop=k, factors=[None, tile_k])
    sch.unroll(k1)
    sch.reorder(i0, j0, i1, j1, k0, k1, i2, j2)
    sch.reverse_compute_at(c_local, j1)
    sch.bind(i0, "blockIdx.y")
    sch.bind(j0, "blockIdx.x")
    sch.bind(i1, "threadIdx.y")
    sch.bind(j1, "threadIdx.x")
    sch.decompose_reduction(block_c, k0)
    return sch


def cache_read_and_coop_fetch(sch: Any, block: Any, nthread: int, read_idx: int, read_loc) -> None:
    """Book §6.1.6: stage an input in shared memory, fetched by all threads (float4 loads)."""
    read_cache = sch.cache_read(block=block, read_buffer_index=read_idx, storage_scope="shared")
    sch.compute_at(block=read_cache, loop=read_loc)
    inner0, inner1 = sch.get_loops(block=read_cache)[-2:]
    inner = sch.fuse(inner0, inner1)
    _, tx, vec = sch.split(loop=inner, factors=[None, nthread, 4])
    sch.vectorize(vec)
    sch.bind(tx, "threadIdx.x")


def blocking_with_shared(
    sch: Any, tile_local_y, tile_local_x, tile_block_y, tile_block_x, tile_k
) -> Any:
    """Book §6.1.6: shared-memory blocking of the 1024^3 matmul."""
    block_c = sch.get_sblock("C")
    c_local = sch.cache_write(block_c, 0, "local")
    i, j, k = sch.get_loops(block=block_c)
    i0, i1, i2 = sch.split(loop=i, factors=[None, tile_block_y, tile_local_y])
    j0, j1, j2 = sch.split(loop=j, factors=[None, tile_block_x, tile_local_x])
    k0, k1 = sch.split(loop=k, factors=[None, tile_k])
    sch.reorder(i0, j0, i1, j1, k0, k1, i2, j2)
    sch.reverse_compute_at(c_local, j1)
    sch.bind(i0, "blockIdx.y")
    sch.bind(j0, "blockIdx.x")
    tx = sch.fuse(i1, j1)
    sch.bind(tx, "threadIdx.x")
    nthread = tile_block_y * tile_block_x
    cache_read_and_coop_fetch(sch, block_c, nthread, 0, k0)
    cache_read_and_coop_fetch(sch, block_c, nthread, 1, k0)
    sch.decompose_reduction(block_c, k0)
    return sch


def gpu_matmul(schedule: Any, *tiles: int) -> Any:
    """The book's 1024^3 matmul (§6.1.5 listing) scheduled by ``schedule(sch, *tiles)``."""
    return schedule(Schedule(listing("ch6_matmul.py", "MyModuleMatmul")), *tiles).mod


MISSING_EXTERN = """
@T.prim_func
def calls_missing(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
    T.func_attr({"global_symbol": "calls_missing", "tirx.noalias": True})
    T.evaluate(T.call_extern("int32", "mlc_no_such_symbol", A.data, B.data))
"""

RELAX_ADD = """
@I.ir_module
class AddTwice:
    @R.function
    def main(x: R.Tensor((4, 4), "float32"), y: R.Tensor((4, 4), "float32")):
        with R.dataflow():
            z = R.add(x, y)
            out = R.add(z, y)
            R.output(out)
        return out
"""


def parse(text: str, kind: str = "tir") -> Any:
    return parse_script(text, {}, kind=kind).value


def cuda_tune_result() -> Any:
    """A tuning result for CUDA as ``%mlc_tune MM --target cuda`` returns it: the book's 1024^3
    matmul, its local-blocking schedule as the best trace, the target it was tuned for.

    The schedule is the book's rather than a search's (MetaSchedule's CUDA space takes minutes
    to sample without a GPU); what is tested is what a tuned CUDA module carries.
    """
    from mlc_jupyter.compilation import resolve_target
    from mlc_jupyter.tune import TuneResult

    workload = listing("ch6_matmul.py", "MyModuleMatmul")
    sch = blocking(Schedule(workload), 8, 8, 8, 8, 4)
    return TuneResult(
        workload=workload,
        mod=sch.mod,
        trace=sch.trace,
        best_latency_s=1e-4,
        baseline_latency_s=None,
        target=resolve_target("cuda -arch=sm_90a"),
        work_dir="",
        n_records=1,
    )


#: A kernel that writes through a data-dependent index: static analysis cannot refuse it.
SCATTER = """
@T.prim_func
def scatter(A: T.Buffer((16,), "float32"), idx: T.Buffer((16,), "int32"), B: T.Buffer((16,), "float32")):
    for i in range(16):
        with T.block("B"):
            vi = T.axis.spatial(16, i)
            B[idx[vi]] = A[vi]
"""
