"""The BLIS-like structure of a matmul-like CPU kernel, and its default tile chosen by rule.

MetaSchedule's default CPU space tiles loops and caches the output, but never changes an operand's
layout, and its register tile is rows x one vector: on AVX2 (8 lanes) a k step is then eight
broadcasts of ``A`` for one load of ``B`` and eight FMAs, and the kernel stays near two thirds of
the machine's peak. This module writes the structure of a GotoBLAS/BLIS kernel with TensorIR's own
primitives:

* an ``mr x nr`` micro-kernel (``nr`` = a few vector registers wide) whose accumulators are a
  ``local`` cache of the output (``cache_write``), unrolled over ``mr`` and the ``nr`` vectors and
  vectorised over the lanes, so LLVM keeps the whole tile in registers and the inner loop is one
  broadcast of ``A`` and one FMA per accumulator per ``k``; ``k`` is unrolled by a sampled factor;
* ``B`` packed into panels one vector wide (``[j // lanes, k, j % lanes]``, ``cache_read`` +
  ``transform_layout``), so the micro-kernel streams ``B`` contiguously instead of jumping a row
  per ``k``; the panel width does not depend on sampled sizes, so mutations keep it valid;
* cache blocking above the micro-kernel (``nc`` columns of ``B`` reused across ``mc`` rows of
  ``A``) with sampled tiles, the outer tiles fused and run in parallel;
* three variants: ``B`` packed once for the whole kernel (its own parallel loop), packed per
  column panel inside the parallel loop, or not packed (small matrices). A ``B`` that is a
  model's weight (``layout_free_buffers``) gets the unpacked variant only: MetaSchedule's
  ``RewriteLayout`` lays it out in the order the loops read it, the same panels, once at build
  time instead of at every call.

``mr`` and the number of vectors in ``nr`` are sampled from shapes that divide the matrix
(``sample_categorical``), the cache tiles and the ``k`` unroll with ``sample_perfect_tile``:
``%mlc_tune`` searches them (``tune/spaces/matmul.py``), and a default build picks them by rule
(:func:`rule_schedule`): the register tile of the direct convolution's rule
(:func:`.conv_schedule.rule_tile`: most accumulators that fit with the ``B`` vectors and a
broadcast, ties to more vectors), the parallel blocks over the larger operand's axis.
Elementwise epilogues (ReLU, bias) are inlined into the write-back of the accumulators, and
elementwise producers into the contraction. Rows from several axes of the output (the pixels of
a 1x1 convolution's NHWC output, :mod:`.pointwise`) are iterated, accumulated and written back as
one axis, so that a tile may cross from one image row to the next.
A workload is *matmul-like* when one reduction block is a contraction
``C[b, i, j] += A[b, i, k] * B[b, k, j]`` (any axis order, ``A``/``B`` may drop the batch axes)
and the structure applies to it without error.

This module imports TVM at import time; import it lazily.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..tvm_compat import (
    PREFETCH_ANNOTATION,
    Schedule,
    buffer_load,
    get_block,
    metaschedule,
    param_buffers,
    region_buffer,
    tir,
    tvm,
    var_dtype,
)
from .conv_schedule import VectorUnit, fits_registers

VARIANTS = ("pack-once", "pack-panel", "no-pack")
#: The fewest rows a matmul-like kernel has.
MIN_ROWS = 4
#: Rows of the micro-kernel, tried in this order among those that divide the rows (7: a 14x14
#: image's 196 pixels in tiles that the jobs of a row split share evenly, :func:`rule_tile`).
MICRO_ROWS = (4, 6, 7, 8)
#: Vector registers across the micro-kernel's columns.
MICRO_VECTORS = (2, 3, 4)
#: The default tile's ``k`` unroll (at most; the largest divisor of the reduction up to it).
K_UNROLL = 4
#: Parallel jobs per core of the default tile, from the axis of the larger operand first
#: (:func:`rule_tile`).
JOBS_PER_CORE = 2


class NotMatmul(Exception):  # noqa: N818 - a verdict, not an error
    """The workload is not one this space schedules."""


@dataclass
class _Roles:
    """The contraction's loops by role, and where ``B``'s axes are."""

    block: Any
    batch: list[Any]
    rows: list[Any]  # spatial loops of A and C only (fused into one)
    col: Any
    red: Any
    b_index: int  # read index of B in the block
    b_axes: tuple[int, ...]  # for each axis of B: -1 batch, 1 col, 2 red
    dtype: str
    index_dtype: str
    extents: tuple[int, int, int]  # rows (fused), cols, reduction
    #: (axis of C, extent) of each row axis, where the block iterates them in C's order
    row_axes: tuple[tuple[int, int], ...] = ()
    iter_roles: tuple[str, ...] = ()  # of each block iterator: "batch", "row", "col", "red"


def _load(expr: Any) -> tuple[Any, list[Any]] | None:
    """``(buffer, indices)`` of the buffer load under casts, or None."""
    _tir = tir()
    while isinstance(expr, _tir.Cast):
        expr = expr.value
    return buffer_load(expr)


def contraction(sch: Any) -> Any:
    """The single reduction block of the function (raises :class:`NotMatmul` otherwise)."""
    _tir = tir()
    reductions = []
    for block in sch.get_child_blocks(get_block(sch, "root")):
        kinds = {int(iv.iter_type) for iv in sch.get(block).iter_vars}
        if _tir.IterVar.CommReduce in kinds:
            reductions.append(block)
    if len(reductions) != 1:
        raise NotMatmul(f"{len(reductions)} reduction blocks")
    return reductions[0]


def matmul_roles(sch: Any, block: Any) -> _Roles:
    """Classify the contraction's loops; raise :class:`NotMatmul` if it is not ``C += A * B``."""
    _tir = tir()
    stmt = sch.get(block)
    body = stmt.body
    if not isinstance(body, _tir.BufferStore) or not isinstance(body.value, _tir.Add):
        raise NotMatmul("the update is not an accumulation")
    acc, product = body.value.a, body.value.b
    acc_load = _load(acc)
    if acc_load is None or not acc_load[0].same_as(body.buffer):
        acc, product = product, acc
    if not isinstance(product, _tir.Mul):
        raise NotMatmul("the accumulated value is not a product")
    a, b = _load(product.a), _load(product.b)
    if a is None or b is None or not str(body.buffer.dtype).startswith("float"):
        raise NotMatmul("not a floating-point product of two buffers")
    iters = {iv.var: iv for iv in stmt.iter_vars}

    def axes(indices: list[Any]) -> list[Any]:
        if not all(isinstance(i, _tir.Var) and i in iters for i in indices):
            raise NotMatmul("an operand is indexed by an expression")
        return list(indices)

    a_vars, b_vars, c_vars = axes(a[1]), axes(b[1]), axes(list(body.indices))
    reduce_vars = [v for v in iters if int(iters[v].iter_type) == _tir.IterVar.CommReduce]
    if len(reduce_vars) != 1 or reduce_vars[0] not in a_vars or reduce_vars[0] not in b_vars:
        raise NotMatmul("not one reduction axis shared by both operands")
    red = reduce_vars[0]
    col_vars = [v for v in c_vars if v in b_vars and v not in a_vars]
    row_vars = [v for v in c_vars if v in a_vars and v not in b_vars]
    batch_vars = [v for v in c_vars if v in a_vars and v in b_vars]
    if len(col_vars) != 1 or not row_vars:
        raise NotMatmul("no single column axis and row axes")
    if not c_vars[-1].same_as(col_vars[0]):
        raise NotMatmul("the output's last axis is not the column axis")
    loops = sch.get_loops(block)
    realize = sch.get(loops[-1]).body if loops else None
    if not hasattr(realize, "iter_values") or len(loops) != len(iters):
        raise NotMatmul("the block is not directly under its own loops")
    loop_of = {}
    for iv, value in zip(stmt.iter_vars, realize.iter_values, strict=True):
        match = [lp for lp in loops if sch.get(lp).loop_var.same_as(value)]
        if len(match) != 1:
            raise NotMatmul("a block iterator is not bound to one loop")
        loop_of[iv.var] = match[0]
    allocated = list(sch.get(get_block(sch, "root")).alloc_buffers)
    params = param_buffers(sch.mod["main"])
    if not any(body.buffer.same_as(buf) for buf in allocated + params):
        # A statement-level allocation (the course's T.alloc_buffer as TVM 0.27 parses it):
        # cache_write then defines its cache twice.
        raise NotMatmul("the output is neither a parameter nor allocated by the root block")
    reads = [region_buffer(r) for r in stmt.reads]
    b_index = next((n for n, buf in enumerate(reads) if buf.same_as(b[0])), -1)
    if b_index < 0 or a[0].same_as(b[0]):
        raise NotMatmul("the operands are not two distinct buffers")
    role = {red: 2, col_vars[0]: 1}
    dom = {v: int(iters[v].dom.extent) for v in iters}
    rows = 1
    for v in row_vars:
        rows *= dom[v]
    return _Roles(
        block=block,
        batch=[loop_of[v] for v in batch_vars],
        rows=[loop_of[v] for v in row_vars],
        col=loop_of[col_vars[0]],
        red=loop_of[red],
        b_index=b_index,
        b_axes=tuple(role.get(v, -1) for v in b_vars),
        dtype=str(body.buffer.dtype),
        index_dtype=var_dtype(red),
        extents=(rows, dom[col_vars[0]], dom[red]),
        row_axes=_row_axes(c_vars, row_vars, list(iters), dom),
        iter_roles=tuple(_iter_role(v, red, col_vars[0], row_vars) for v in iters),
    )


def _iter_role(var: Any, red: Any, col: Any, row_vars: list[Any]) -> str:
    """A block iterator's role in the contraction: ``red``, ``col``, ``row`` or ``batch``."""
    if var.same_as(red):
        return "red"
    if var.same_as(col):
        return "col"
    return "row" if any(var.same_as(r) for r in row_vars) else "batch"


def _row_axes(c_vars: list[Any], row_vars: list[Any], iters: list[Any], dom: Any) -> Any:
    """``_Roles.row_axes``: empty where the block iterates the rows in another order than C."""
    in_block = [v for v in iters if any(v.same_as(r) for r in row_vars)]
    if not all(a.same_as(b) for a, b in zip(in_block, row_vars, strict=True)):
        return ()
    positions = [next(n for n, c in enumerate(c_vars) if c.same_as(v)) for v in row_vars]
    return tuple((n, dom[v]) for n, v in zip(positions, row_vars, strict=True))


def _inline_producers(sch: Any, block: Any) -> None:
    """Inline elementwise producers of the operands (a transpose, a cast) into the contraction."""
    for producer in sch.get_producers(block):
        _inline_producers(sch, producer)
        try:
            sch.compute_inline(producer)
        except Exception as err:  # noqa: BLE001 - TVM's ScheduleError
            raise NotMatmul(f"a producer cannot be inlined: {type(err).__name__}") from None


def _micro_choices(rows: int, vectors: int, unit: VectorUnit) -> tuple[list[int], list[int]]:
    """The micro-kernel rows and column vectors to sample from: those that divide the tile."""
    mr = [m for m in MICRO_ROWS if rows % m == 0]
    nv = [v for v in MICRO_VECTORS if vectors % v == 0]
    if not mr:
        mr = [max(d for d in range(1, 9) if rows % d == 0)]
    if not nv:
        nv = [max(d for d in range(1, 5) if vectors % d == 0)]
    if not fits_registers(min(mr), min(nv), unit.registers):
        raise NotMatmul("no micro-kernel fits the vector registers")
    return mr, nv


def _categorical(sch: Any, choices: list[int]) -> Any:
    return sch.sample_categorical(choices, [1.0 / len(choices)] * len(choices))


def _pack_b(sch: Any, roles: _Roles, lanes: int, at: Any) -> None:
    """Copy B into panels one vector wide: ``[batch..., j // lanes, k, j % lanes]``."""
    _tir = tir()
    packed = sch.cache_read(roles.block, roles.b_index, "global")
    axes = roles.b_axes

    def panel(*idx: Any) -> list[Any]:
        batch = [i for i, role in zip(idx, axes, strict=True) if role == -1]
        j = idx[axes.index(1)]
        k = idx[axes.index(2)]
        return [*batch, j // lanes, k, j % lanes]

    index_map = _tir.IndexMap.from_func(panel, ndim=len(axes), index_dtype=roles.index_dtype)
    sch.transform_layout(roles.block, ("read", roles.b_index), index_map)
    if at is not None:
        sch.compute_at(packed, at, preserve_unit_loops=True)  # one loop per axis of B
    own = sch.get_loops(packed)[-len(axes) :]
    col = own[axes.index(1)]
    sch.reorder(*[lp for lp in own if not sch.get(lp).same_as(sch.get(col))], col)
    _, lane = sch.split(col, [None, lanes])
    sch.vectorize(lane)
    if at is None:
        sch.parallel(sch.get_loops(packed)[0])


def _inline_epilogue(sch: Any, write: Any) -> list[Any]:
    """Inline the elementwise chain after the accumulators' write-back into it (bias, then
    ReLU ...) while each result has one reader; a sole reader that cannot be inlined is returned
    (it runs after each tile). A result that several blocks read (GELU's input) stays as it is:
    inlining one reader would leave the others reading a buffer nothing writes."""
    first = True
    while True:
        consumers = list(sch.get_consumers(write))
        if len(consumers) != 1:
            return []
        try:
            sch.reverse_compute_inline(consumers[0])
        except Exception:  # noqa: BLE001 - TVM's ScheduleError
            return consumers if first else []  # later links run after the tiles, at the root
        first = False


def _epilogue_per_tile(sch: Any, block: Any, ir: Any, lanes: int) -> None:
    """An elementwise epilogue that cannot be inlined runs right after each output tile."""
    if any(int(iv.iter_type) != 0 for iv in sch.get(block).iter_vars):
        raise NotMatmul("an epilogue is not elementwise")
    try:
        sch.reverse_compute_at(block, ir)
    except Exception as err:  # noqa: BLE001 - TVM's ScheduleError
        raise NotMatmul(f"an epilogue cannot follow the tiles: {err}") from None
    _, lane = sch.split(sch.get_loops(block)[-1], [None, lanes])
    sch.vectorize(lane)


def schedule_matmul(sch: Any, variant: str, unit: VectorUnit) -> None:
    """Apply the BLIS-like structure (one design space, sizes sampled) to ``sch`` in place."""
    block = contraction(sch)
    _inline_producers(sch, block)
    roles = matmul_roles(sch, block)
    rows, cols, _ = roles.extents
    lanes = unit.lanes
    if cols % lanes or rows < MIN_ROWS:
        raise NotMatmul("columns not a multiple of the vector lanes, or fewer than 4 rows")
    mr_choices, nv_choices = _micro_choices(rows, cols // lanes, unit)
    b = region_buffer(sch.get(block).reads[roles.b_index])
    by_row = len(roles.row_axes) > 1
    if by_row:
        roles = _rows_as_one_axis(sch, roles)
    loops = [*roles.batch, *roles.rows, roles.col, roles.red]
    sch.reorder(*loops)
    row = sch.fuse(*roles.rows) if len(roles.rows) > 1 else roles.rows[0]
    mr = _categorical(sch, mr_choices)
    nv = _categorical(sch, nv_choices)
    row_outer, im = sch.split(row, [None, mr])
    ic, ir = sch.split(row_outer, sch.sample_perfect_tile(row_outer, n=2))
    col_vec, jl = sch.split(roles.col, [None, lanes])
    col_outer, jv = sch.split(col_vec, [None, nv])
    jc, jr = sch.split(col_outer, sch.sample_perfect_tile(col_outer, n=2))
    k0, ku = sch.split(roles.red, sch.sample_perfect_tile(roles.red, n=2, max_innermost_factor=8))
    sch.reorder(*roles.batch, jc, ic, jr, ir, k0, ku, im, jv, jl)
    if variant == "pack-panel":
        outer = sch.fuse(*roles.batch, jc) if roles.batch else jc
    else:
        outer = sch.fuse(*roles.batch, jc, ic)
    sch.parallel(outer)
    write = sch.cache_write(block, 0, "local")
    kept = _inline_epilogue(sch, write)
    if by_row:
        _write_back_by_row(sch, block, write, roles)
    sch.reverse_compute_at(write, ir)
    for consumer in kept:
        _epilogue_per_tile(sch, consumer, ir, lanes)
    if variant != "no-pack":
        _pack_b(sch, roles, lanes, outer if variant == "pack-panel" else None)
    sch.unroll(ku)
    sch.unroll(im)
    sch.unroll(jv)
    sch.vectorize(jl)
    init = sch.decompose_reduction(block, k0)
    if variant == "no-pack":  # B from memory, panel after panel: the next one read ahead
        reads = [region_buffer(r) for r in sch.get(block).reads]
        sch.annotate(k0, PREFETCH_ANNOTATION, next(n for n, r in enumerate(reads) if r.same_as(b)))
    init_loops = sch.get_loops(init)
    sch.vectorize(init_loops[-1])
    write_loops = sch.get_loops(write)
    _, lane = sch.split(write_loops[-1], [None, lanes])
    sch.vectorize(lane)


def _rows_as_one_axis(sch: Any, roles: _Roles) -> _Roles:
    """``roles`` with the contraction iterating its rows as one axis (a block iterator, not only
    a fused loop), so that :func:`_write_back_by_row` can lay its tiles out as boxes."""
    rows = [n for n, role in enumerate(roles.iter_roles) if role == "row"]
    extents = [extent for _, extent in roles.row_axes]  # the block's order of the rows
    dtype = roles.index_dtype

    def fused(*iters: Any) -> list[Any]:
        row = iters[rows[0]]
        for n, extent in zip(rows[1:], extents[1:], strict=True):
            row = row * tir().const(extent, dtype) + iters[n]
        return [row if n == rows[0] else it for n, it in enumerate(iters) if n not in rows[1:]]

    arity = len(roles.iter_roles)
    sch.transform_block_layout(
        roles.block, tir().IndexMap.from_func(fused, ndim=arity, index_dtype=dtype)
    )
    kept = [role for n, role in enumerate(roles.iter_roles) if n not in rows[1:]]
    loops = dict(zip(range(len(kept)), sch.get_loops(roles.block), strict=True))
    return dataclasses.replace(
        roles,
        batch=[loops[n] for n, role in enumerate(kept) if role == "batch"],
        rows=[loops[kept.index("row")]],
        col=loops[kept.index("col")],
        red=loops[kept.index("red")],
    )


def _write_back_by_row(sch: Any, block: Any, write: Any, roles: _Roles) -> None:
    """The accumulators and their write-back indexed by the fused row, as the tiles run.

    With rows from several axes of ``C`` (the pixels of a 1x1 convolution's NHWC output), a tile
    of ``mr`` consecutive rows can cross from one image row to the next: its region of a
    ``[n, h, w, c]`` buffer is no box, and the write-back's loops after ``reverse_compute_at``
    would depend on the tile (a dynamic loop, which the post-processing refuses). Laid out and
    iterated by ``[n * h * w + ..., c]``, each tile is a box again."""
    axes = [axis for axis, _ in roles.row_axes]

    def by_row(*index: Any) -> list[Any]:
        fused = index[axes[0]]
        for axis, extent in roles.row_axes[1:]:
            fused = fused * tir().const(extent, roles.index_dtype) + index[axis]
        return [fused if n == axes[0] else i for n, i in enumerate(index) if n not in axes[1:]]

    arity = len(sch.get(write).iter_vars)
    index_map = tir().IndexMap.from_func(by_row, ndim=arity, index_dtype=roles.index_dtype)
    sch.transform_layout(block, ("write", 0), index_map)
    sch.transform_block_layout(write, index_map)


def weight_b(sch: Any, layout_free_attr: str) -> bool:
    """Whether ``B`` is a weight the build lays out itself: a buffer the function's
    ``layout_free_attr`` (``layout_free_buffers``) lists, which MetaSchedule's ``RewriteLayout`` rewrites into the order the loops read it (the
    panels the packed variants copy it into), once, at build time. Packing it in the kernel too
    would transform it twice, which ``RewriteLayout`` refuses."""
    func = sch.mod["main"]
    if layout_free_attr not in (func.attrs or {}):
        return False
    probe = sch.copy()
    block = contraction(probe)
    _inline_producers(probe, block)
    b = region_buffer(probe.get(block).reads[matmul_roles(probe, block).b_index])
    return any(func.params[int(i)].same_as(b) for i in func.attrs[layout_free_attr])


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _split_jobs(tiles: int, jobs: int) -> list[int]:
    """``[outer, inner]`` of ``tiles``: the fewest outer blocks that give ``jobs`` (all when
    there are fewer)."""
    outer = min((d for d in _divisors(tiles) if d >= jobs), default=tiles)
    return [outer, tiles // outer]


@dataclass(frozen=True)
class RuleTile:
    """The decisions of :func:`schedule_matmul` a default build takes, in the order it samples
    them: the micro-kernel's rows and vectors, then the tiles of the row blocks, the column
    blocks and the reduction (``[outer, inner]`` each)."""

    rows: int
    vectors: int
    row_tiles: list[int]
    col_tiles: list[int]
    k_tiles: list[int]


def rule_tile(
    extents: tuple[int, int, int],
    batch: int,
    unit: VectorUnit,
    cores: int,
    split: str = "larger",
    cache_bytes: int | None = None,
    element_bytes: int = 4,
    rows_are_pixels: bool = False,
) -> RuleTile:
    """The default tile of a ``rows x cols x k`` contraction (``batch`` of them).

    The micro-kernel is the largest that :func:`.conv_schedule.fits_registers` allows (ties to
    more vectors); ``k`` is unrolled by up to :data:`K_UNROLL`; the parallel loop (batch, column
    blocks, row blocks fused) gets :data:`JOBS_PER_CORE` jobs per core, from the batch first, then
    from the axis that splits the larger operand: the columns of ``B`` (each core keeps its slice
    of the weight in its cache), or the rows of ``A`` when there are more rows than columns. A
    1x1 convolution over a large image is the latter: each core then reads its own pixels, the
    ones the depthwise kernel before it wrote on that core; MobileNet as a whole ran no slower,
    and faster on a busy machine (``bench/bench_parallel_split.py``). ``split="columns"`` takes
    the columns first always, as the rule did before. A 1x1 convolution with no more pixels
    than columns (``rows_are_pixels``) splits its pixels too where the whole weight fits in half
    of ``cache_bytes`` (one core's L2, :func:`.targets.core_cache_bytes`) and a micro-kernel
    that fits divides them into tiles the jobs share evenly (a 14x14 image's 196 pixels in 28
    tiles of 7): each core then reads the pixels the depthwise kernel before it wrote on that
    core and writes those the one after it reads there, instead of handing half of each across
    the cores, and reads the whole weight, which its cache holds. A product alone gains nothing
    from it (``bench/results/bench_row_split_2026-11-30_emr.txt``). Raises :class:`NotMatmul`
    when no micro-kernel fits.
    """
    rows, cols, k = extents
    mr_choices, nv_choices = _micro_choices(rows, cols // unit.lanes, unit)
    fits = [(m, v) for m in mr_choices for v in nv_choices if fits_registers(m, v, unit.registers)]
    if not fits:
        raise NotMatmul("no micro-kernel fits the vector registers with its B vectors")
    mr, nv = max(fits, key=lambda mv: (mv[0] * mv[1], mv[1]))
    jobs = max(1, math.ceil(JOBS_PER_CORE * cores / batch))
    weight_fits = bool(cache_bytes) and 2 * k * cols * element_bytes <= (cache_bytes or 0)
    own_rows = None
    if split == "larger" and batch == 1 and rows <= cols and rows_are_pixels and weight_fits:
        own_rows = _even_row_split(fits, rows, jobs)
    if own_rows is not None:
        mr, nv = own_rows
        row_tiles = _split_jobs(rows // mr, jobs)
        col_tiles = _split_jobs(cols // (unit.lanes * nv), 1)
    elif split == "larger" and batch == 1 and rows > cols:
        row_tiles = _split_jobs(rows // mr, jobs)
        col_tiles = _split_jobs(cols // (unit.lanes * nv), math.ceil(jobs / row_tiles[0]))
    else:
        col_tiles = _split_jobs(cols // (unit.lanes * nv), jobs)
        row_tiles = _split_jobs(rows // mr, math.ceil(jobs / col_tiles[0]))
    unroll = rule_k_unroll(k)
    return RuleTile(mr, nv, row_tiles, col_tiles, [k // unroll, unroll])


def _even_row_split(fits: list[tuple[int, int]], rows: int, jobs: int) -> tuple[int, int] | None:
    """The micro-kernel of ``fits`` with most accumulators whose row tiles ``jobs`` share evenly."""
    even = [(m, v) for m, v in fits if (rows // m) % jobs == 0]
    return max(even, key=lambda mv: (mv[0] * mv[1], mv[1])) if even else None


def rule_k_unroll(k: int) -> int:
    """The default micro-kernel's unroll of a ``k``-long reduction: the largest divisor of ``k``
    up to :data:`K_UNROLL` (a few broadcast-FMA steps in a row, with no loop test between them).
    Winograd's matrix products (:mod:`.winograd`) take the same rule."""
    return max(d for d in _divisors(k) if d <= K_UNROLL)


def rule_decisions(tile: RuleTile) -> Callable[..., Any]:
    """A decision provider for ``Trace.apply_to_schedule`` that replays a traced
    :func:`schedule_matmul` with ``tile``'s decisions."""
    categorical = iter([tile.rows, tile.vectors])
    perfect = iter([tile.row_tiles, tile.col_tiles, tile.k_tiles])

    def provide(inst: Any, inputs: Any, attrs: Any, decision: Any) -> Any:
        kind = inst.kind.name
        if kind == "SampleCategorical":
            return [int(v) for v in inst.attrs[0]].index(next(categorical))
        if kind == "SamplePerfectTile":
            return next(perfect)
        return decision

    return provide


def rule_schedule(
    task: Any,
    unit_of: Callable[[str], VectorUnit],
    cores: int,
    layout_free_attr: str,
    cache_bytes: int | None = None,
) -> tuple[Any, Any] | None:
    """``task``'s one PrimFunc ``main`` scheduled with the BLIS structure and :func:`rule_tile`,
    post-processed as MetaSchedule does (``RewriteLayout`` packs a weight ``B``); ``unit_of``
    gives the vector unit of a dtype, ``cache_bytes`` one core's L2 (``None``: unknown).
    ``(func, trace)``, or ``None`` for a kernel that is not matmul-like."""
    try:
        probe = Schedule(task)
        block = contraction(probe)
        _inline_producers(probe, block)
        roles = matmul_roles(probe, block)
        unit = unit_of(roles.dtype)
        rows, cols, _ = roles.extents
        if cols % unit.lanes or rows < MIN_ROWS:
            return None
        batch = 1
        for loop in roles.batch:
            batch *= int(probe.get(loop).extent)
        element_bytes = max(1, int(tvm().DataType(roles.dtype).bits) // 8)
        pixels = sum(extent > 1 for _, extent in roles.row_axes) >= 2  # an image's height, width
        tile = rule_tile(roles.extents, batch, unit, cores, cache_bytes=cache_bytes,
                         element_bytes=element_bytes, rows_are_pixels=pixels)  # fmt: skip
        traced = Schedule(task)
        variant = "no-pack" if weight_b(traced, layout_free_attr) else "pack-once"
        schedule_matmul(traced, variant, unit)
        sch = Schedule(task)
        traced.trace.apply_to_schedule(
            sch, remove_postproc=True, decision_provider=rule_decisions(tile)
        )
        sch.enter_postproc()
        for postproc in metaschedule().postproc.Postproc.create("llvm"):
            if not postproc.apply(sch):
                return None
    except NotMatmul:
        return None
    except Exception:  # noqa: BLE001 - a primitive refused: MetaSchedule's space schedules it
        return None
    return sch.mod["main"], sch.trace
