"""Winograd convolution on CPUs: 3x3 stride-1 convolutions with fewer multiplications.

A direct convolution does ``9 x C`` multiply-adds per output and channel; Winograd's minimal
filtering F(m x m, 3 x 3) (Lavin & Gray, 2015) computes an ``m x m`` tile of outputs from an
``a x a`` tile of inputs (``a = m + 2``) with ``a^2`` multiplications per input channel instead of
``9 m^2``: 2.25x fewer for F(2x2), 4x fewer for F(4x4). Four steps, for NHWC data:

1. the weight, transformed once at build time in NumPy: ``U = G g G^T`` per input and output
   channel, as ``[a, a, C, K]`` (:func:`transformed_weight`);
2. the input padded once (out to whole tiles, padded ones included), then each input tile
   transformed, ``V = B^T d B`` (separable: rows, then columns), laid out ``[a, a, tiles, C]``;
3. ``a^2`` independent matrix products ``M[xi, nu] = V[xi, nu] @ U[xi, nu]`` (tiles x C times
   C x K): almost all of the arithmetic, scheduled as the matmul micro-kernel is (a tile of ``mr``
   rows x ``nv`` vectors of output channels in registers, the transformed weight packed in panels
   by ``RewriteLayout``, its next slice prefetched as the tiles' loops run, into every cache or,
   where a tuning chose so, the second level only); each row of tiles is
   padded to a whole number of register tiles (a prime count, 13, would leave a one-tile one),
   the padded tiles computed and left out;
4. each output tile transformed back, ``Y = A^T M A``, and written with the convolution's
   epilogue (bias, ReLU, a residual add) fused in.

Steps 2 to 4 run block by block, a block being one or more rows of output tiles (and, where the
transformed weight is larger than a core's cache, half of the output channels): each parallel
job transforms its block's input tiles, multiplies them and transforms its outputs back while
``V`` and ``M`` of the block are still in its cache. Done as three passes over the whole image,
``V`` and ``M`` went through memory between them (``bench/bench_winograd_blocks.py``).

The transforms are written as the sparse sums their matrices are (zero coefficients left out,
``+-1`` without a multiplication), one expression per row chosen by the row index, which the
unrolled loops fold to constants. The matrices are Cook-Toom's with the interpolation points of
Barabasz et al. (TVM's topi uses the same), whose rounding error stays well inside 1e-4 of the
direct convolution in fp32.

This module imports TVM at import time; import it lazily.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..tvm_compat import (
    PREFETCH_LOCALITIES,
    PREFETCH_LOCALITY_ANNOTATION,
    constant_array,
    expr_type,
    get_block,
    param_buffers,
    tir,
    tvm,
    winograd_matrices,
)
from .conv_schedule import fits_registers, prefetch_weight
from .matmul_schedule import rule_k_unroll
from .tir_walk import blocks

#: Block names of the Winograd kernel (the schedule finds its steps by them).
PAD, INPUT_ROWS, INPUT, PRODUCT, OUTPUT_ROWS, OUTPUT, RESULT, CROP = (
    "winograd_pad", "winograd_input_rows", "winograd_input", "winograd_product", "winograd_output_rows",
    "winograd_output", "winograd_result", "winograd_crop",
)  # fmt: skip


@dataclass(frozen=True)
class Plan:
    """How a convolution is computed with Winograd: its output tile ``m`` x ``m``, and the tiles
    of a row padded to a multiple of ``row_tile`` (so a register tile of that many fits whole)."""

    m: int
    row_tile: int = 1


def transformed_weight(weight_hwio: np.ndarray, m: int) -> np.ndarray:
    """``U = G g G^T`` of an HWIO 3x3 weight, as ``[a, a, C, K]`` in the weight's dtype."""
    _, _, g = winograd_matrices(m, int(weight_hwio.shape[0]))
    u = np.einsum("xa,abck,yb->xyck", g, weight_hwio.astype(np.float64), g, optimize=True)
    return np.ascontiguousarray(u.astype(weight_hwio.dtype))


def _sparse_sum(coefficients: Any, term: Any, dtype: str) -> Any:
    """``sum(c * term(i))`` over the nonzero coefficients, +-1 without a multiplication."""
    total = None
    for i, c in enumerate(float(c) for c in coefficients):
        if c == 0.0:
            continue
        value = term(i)
        if c == -1.0:
            part, sign = value, -1
        elif c == 1.0:
            part, sign = value, 1
        else:
            part, sign = value * tir().const(c, dtype), 1
        if total is None:
            total = part if sign > 0 else -part
        else:
            total = total + part if sign > 0 else total - part
    return total if total is not None else tir().const(0.0, dtype)


def _by_row(index: Any, rows: list[Any]) -> Any:
    """The expression of row ``index`` (a loop the schedule unrolls, so the choice folds).

    Chosen by ``if_then_else``, not ``Select``: vectorising a ``Select`` broadcasts its
    condition, and TVM's simplifier folds no ``Select`` on a broadcast constant, so every
    unrolled element kept all the rows' sums through the lowering and into LLVM, which compiled
    them to the same code more slowly (``bench/results/bench_build_time_*``)."""
    out = rows[-1]
    for i in range(len(rows) - 2, -1, -1):
        out = tir().if_then_else(index == i, rows[i], out)
    return out


def winograd_compute(data: Any, weight: Any, padding: tuple[int, int, int, int], plan: Plan) -> Any:
    """The TE computation of an NHWC 3x3 stride-1 convolution by Winograd; ``weight`` is the
    transformed ``[a, a, C, K]`` one (:func:`transformed_weight`), ``padding`` (top, left,
    bottom, right)."""
    te = tvm().te
    m = plan.m
    a_mat, b_mat, _ = winograd_matrices(m, 3)
    alpha = m + 2
    n_, h, w, c_in = (int(d) for d in data.shape)
    k_out = int(weight.shape[-1])
    top, left, bottom, right = padding
    out_h, out_w = h + top + bottom - 2, w + left + right - 2
    tiles_h = math.ceil(out_h / m)
    tiles_w = math.ceil(math.ceil(out_w / m) / plan.row_tile) * plan.row_tile
    rows = n_ * tiles_h * tiles_w  # the tiles (padded ones never written): the products' rows
    dtype = str(data.dtype)
    zero = tir().const(0.0, dtype)

    # the input with its padding, out to whole tiles: the transform then reads it unguarded
    pad_h, pad_w = tiles_h * m + 2, tiles_w * m + 2
    padded = te.compute(
        (n_, pad_h, pad_w, c_in),
        lambda b, y, x, c: tir().if_then_else(
            tir().all(y >= top, y < h + top, x >= left, x < w + left),
            data[b, y - top, x - left, c],
            zero,
        ),
        name=PAD,
    )

    def pixel(p: Any, r: int, s: Any, c: Any) -> Any:
        image, t = p // (tiles_h * tiles_w), p % (tiles_h * tiles_w)
        return padded[image, t // tiles_w * m + r, t % tiles_w * m + s, c]

    # V = B^T d B: rows first (over the tile's rows r), then columns (over its columns s)
    rows_t = te.compute(
        (alpha, alpha, rows, c_in),
        lambda xi, s, p, c: _by_row(
            xi, [_sparse_sum(b_mat[:, i], lambda r: pixel(p, r, s, c), dtype) for i in range(alpha)]
        ),
        name=INPUT_ROWS,
    )
    v = te.compute(
        (alpha, alpha, rows, c_in),
        lambda xi, nu, p, c: _by_row(
            nu,
            [_sparse_sum(b_mat[:, j], lambda s: rows_t[xi, s, p, c], dtype) for j in range(alpha)],
        ),
        name=INPUT,
    )
    rc = te.reduce_axis((0, c_in), name="rc")
    product = te.compute(
        (alpha, alpha, rows, k_out),
        lambda xi, nu, p, k: te.sum(v[xi, nu, p, rc] * weight[xi, nu, rc, k], axis=rc),
        name=PRODUCT,
    )
    # Y = A^T M A: rows first, then columns
    out_rows = te.compute(
        (m, alpha, rows, k_out),
        lambda i, nu, p, k: _by_row(
            i, [_sparse_sum(a_mat[:, r], lambda x: product[x, nu, p, k], dtype) for r in range(m)]
        ),
        name=OUTPUT_ROWS,
    )
    y_tiles = te.compute(
        (m, m, rows, k_out),
        lambda i, j, p, k: _by_row(
            j, [_sparse_sum(a_mat[:, s], lambda x: out_rows[i, x, p, k], dtype) for s in range(m)]
        ),
        name=OUTPUT,
    )
    width = tiles_w * m
    if math.ceil(out_w / m) == tiles_w:  # no padded tile: the result is the output
        width = out_w
    result = te.compute(
        (n_, out_h, width, k_out),
        lambda b, y, x, k: y_tiles[
            y % m, x % m, b * tiles_h * tiles_w + y // m * tiles_w + x // m, k
        ],
        name=RESULT,
    )
    if width == out_w:
        return result
    # the padded tiles' outputs left out (computed whole, so each job's products are whole
    # register tiles)
    return te.compute((n_, out_h, out_w, k_out), lambda b, y, x, k: result[b, y, x, k], name=CROP)


@dataclass(frozen=True)
class Decisions:
    """The matrix products' register tile (``rows`` tiles x ``vectors`` vectors of channels, the
    reduction unrolled by ``unroll``), the parallel jobs (``block_rows`` rows of output tiles by
    ``1 / k_split`` of the output channels each) and the caches the transformed weight's next
    slice is prefetched into (``prefetch_locality``, one of ``PREFETCH_LOCALITIES``)."""

    rows: int
    vectors: int
    unroll: int = 1
    block_rows: int = 1
    k_split: int = 1
    prefetch_locality: int = PREFETCH_LOCALITIES[0]


@dataclass(frozen=True)
class Choices:
    """What the tuning space samples each decision from (the default's is one of each)."""

    rows: list[int]
    vectors: list[int]
    block_rows: list[int]
    k_splits: list[int]


def _has_block(sch: Any, name: str) -> bool:
    try:
        _block_named(sch, name)
    except LookupError:
        return False
    return True


def _block_named(sch: Any, name: str) -> Any:
    """The root's child block called ``name`` (or ``name_1`` ...: fusing renames clashes)."""
    for block in sch.get_child_blocks(get_block(sch, "root")):
        found = str(sch.get(block).name_hint)
        if found == name or (found.startswith(name + "_") and found[len(name) + 1 :].isdigit()):
            return block
    raise LookupError(name)


#: The longest row block and the widest channel block (in vectors) the space samples.
MAX_ROWS, MAX_VECTORS = 12, 4
#: The longest unrolled run of the products' reduction the space samples.
MAX_UNROLL = 4
#: The largest transformed weight (bytes) the default rule leaves whole to every job: the
#: jobs of a larger one split the output channels, so each core reads its part only.
WEIGHT_PER_JOB_BYTES = 2**20
#: The most passes of the register tile over each slice of the transformed weight for which the
#: default rule prefetches the next slice into the second-level cache: with so little arithmetic
#: per slice (a 7x7 layer's 16 tiles) the slices stream in faster than prefetches into the first
#: level let them, where more passes gained from the first (``bench/bench_weight_prefetch.py``).
FEW_PASSES = 2


def tile_grid(func: Any) -> tuple[int, int]:
    """The rows (batch rows included) and columns (padded ones included) of output tiles of a
    Winograd kernel."""
    m = tile_of(func)
    batch, height, _, _ = (int(d) for d in param_buffers(func)[-1].shape)
    tile_rows = batch * math.ceil(height / m)
    return tile_rows, product_extents(func)[0] // tile_rows


def choices(func: Any, lanes: int) -> Choices:
    """The decisions of a Winograd kernel's space: row blocks dividing a row of tiles (so a
    block of whole rows needs no guard) or spanning whole rows of tiles (for a job of all of
    them: a 7x7 layer's four tiles a row leave the micro-kernel too few rows for each weight
    vector it loads), channel vectors dividing a half of the channels where they split in two,
    one row of tiles or all of them per job (:func:`fits_job` says which rows suit which)."""
    _, channels, _ = product_extents(func)
    tile_rows, tile_cols = tile_grid(func)
    vectors = channels // lanes
    k_splits = [1, 2] if vectors % 2 == 0 else [1]
    spanning = [tile_cols * n for n in _divisors(tile_rows, MAX_ROWS // tile_cols) if n > 1]
    return Choices(
        rows=_divisors(tile_cols, MAX_ROWS) + spanning,
        vectors=_divisors(vectors // k_splits[-1], MAX_VECTORS),
        block_rows=sorted({1, tile_rows}),
        k_splits=k_splits,
    )


def fits_job(func: Any, rows: int, block_rows: int) -> bool:
    """Whether a register tile of ``rows`` tiles divides a job of ``block_rows`` rows of tiles
    (one that does not would leave a guarded, partly empty register tile in every job)."""
    _, tile_cols = tile_grid(func)
    return (tile_cols * block_rows) % rows == 0


def sampled_fit(func: Any, values: list[int]) -> bool:
    """:func:`fits_job` on the decisions :func:`schedule_winograd` sampled, in its order (the
    register tile's rows and vectors, the job's height in output rows, the channel split)."""
    if len(values) < 3:
        return True
    return fits_job(func, values[0], values[2] // tile_of(func))


def _divisors(n: int, cap: int) -> list[int]:
    return [d for d in range(1, min(n, cap) + 1) if n % d == 0]


def _sample(sch: Any, options: list[int], chosen: int | None) -> Any:
    """One of ``options``, uniformly, or the one ``chosen``."""
    return sch.sample_categorical(
        options,
        [1.0 / len(options)] * len(options),
        decision=options.index(chosen) if chosen is not None else None,
    )


def _inline_epilogue(sch: Any, name: str) -> Any:
    """Inline block ``name`` and every epilogue block but the last into the last; return it."""
    result = _block_named(sch, name)
    consumers = list(sch.get_consumers(result))
    if not consumers:
        return result
    first = str(sch.get(consumers[0]).name_hint)
    sch.compute_inline(result)
    root_blocks = list(sch.get_child_blocks(get_block(sch, "root")))
    start = next(i for i, blk in enumerate(root_blocks) if str(sch.get(blk).name_hint) == first)
    after = root_blocks[start:]
    for block in after[:-1]:
        sch.compute_inline(block)
    return after[-1]


def _in_registers(sch: Any, name: str, at: Any, by_row: int) -> None:
    """Compute a transform pass (rows or columns) at loop ``at``, in registers, with the loop
    that picks each element's expression (``by_row``: its first or second loop) unrolled
    (:func:`_unroll_picking_loop`)."""
    block = _block_named(sch, name)
    sch.compute_at(block, at, preserve_unit_loops=True)
    sch.set_scope(block, 0, "local")
    *_, first, second, _tiles, lane = sch.get_loops(block)
    _unroll_picking_loop(sch, (first, second)[by_row])
    sch.vectorize(lane)


def _unroll_picking_loop(sch: Any, loop: Any) -> None:
    """Unroll the loop of a transform whose index picks each element's expression
    (:func:`_by_row`), so that the choice folds; the transform's other loop is left to LLVM,
    which unrolls it too. Unrolled in TIR as well, it made TVM's lowering of a Winograd kernel
    slower by a quarter and the model no faster (``bench/results/bench_build_time_*``)."""
    sch.unroll(loop)


def schedule_winograd(sch: Any, lanes: int, decisions: Decisions | None = None) -> None:
    """Schedule a Winograd kernel (``main``, with the convolution's epilogue fused after it)
    block by block: the decisions from ``decisions``, or sampled when it is ``None`` (the
    tuning space, ``tune/spaces/conv.py``; the default build's are one point of it)."""
    func = sch.mod["main"]
    m = tile_of(func)
    options = choices(func, lanes)
    mr = _sample(sch, options.rows, decisions.rows if decisions else None)
    nv = _sample(sch, options.vectors, decisions.vectors if decisions else None)
    # sampled as output rows (a trace keeps a sampled value, not an expression of one)
    block_height = _sample(
        sch,
        [rows * m for rows in options.block_rows],
        decisions.block_rows * m if decisions else None,
    )
    k_split = _sample(sch, options.k_splits, decisions.k_split if decisions else None)
    # 0. the padded input: once, in parallel, vectorised (read as zeros inside the unrolled
    # transforms instead, the guards made the whole model's build far slower to compile:
    # bench/results/bench_winograd_blocks_2026-11-29_zen5.txt)
    pad = _block_named(sch, PAD)
    *outer_pad, c_pad = sch.get_loops(pad)
    sch.parallel(sch.fuse(*outer_pad))
    _, lane = sch.split(c_pad, [None, lanes])
    sch.vectorize(lane)
    # the jobs: blocks of rows of output tiles (by part of the channels), in parallel; where
    # the rows have padded tiles, the result (all of them) is the anchor and the output after
    padded = _has_block(sch, CROP)
    last = _inline_epilogue(sch, CROP if padded else RESULT)
    anchor = _block_named(sch, RESULT) if padded else last
    b, y, x, k = sch.get_loops(anchor)
    y_block, y = sch.split(y, [None, block_height])
    k_part, k = sch.split(k, [k_split, None])
    sch.reorder(b, y_block, k_part, y, x, k)
    job = sch.fuse(b, y_block, k_part)
    sch.parallel(job)
    # 3. output transform with the epilogue: per output tile and vector of channels
    y_tile, yi = sch.split(y, [None, m])
    x_tile, xi = sch.split(x, [None, m])
    k_vector, lane = sch.split(k, [None, lanes])
    sch.reorder(y_tile, x_tile, k_vector, yi, xi, lane)
    tile_loop = sch.fuse(y_tile, x_tile, k_vector)
    sch.unroll(yi)
    sch.unroll(xi)
    sch.vectorize(lane)
    _in_registers(sch, OUTPUT, tile_loop, by_row=1)
    _in_registers(sch, OUTPUT_ROWS, tile_loop, by_row=0)
    # 2. the block's matrix products: the micro-kernel
    product = _block_named(sch, PRODUCT)
    sch.compute_at(product, job, preserve_unit_loops=True)
    *_, xi, nu, p, k, rc = sch.get_loops(product)
    po, pi = sch.split(p, [None, mr])
    ko, kv, kl = sch.split(k, [None, nv, lanes])
    reduction = int(sch.get(rc).extent)
    unroll = sch.sample_perfect_tile(
        rc,
        n=2,
        max_innermost_factor=MAX_UNROLL,
        decision=[reduction // decisions.unroll, decisions.unroll] if decisions else None,
    )
    ro, ri = sch.split(rc, unroll)
    sch.reorder(xi, nu, ko, po, ro, ri, pi, kv, kl)
    write = sch.cache_write(product, 0, "local")
    sch.reverse_compute_at(write, po, preserve_unit_loops=True)
    sch.unroll(ri)
    sch.unroll(pi)
    sch.unroll(kv)
    sch.vectorize(kl)
    init = sch.decompose_reduction(product, ro)
    if prefetch_weight(sch, product, ro, [2]):  # U's next slice, as the tiles' loops run
        # few tiles (a 7x7 layer's) reuse each weight vector little: the slices stream in faster
        # than prefetches into the first-level cache let them (``tvm_compat/prefetch.py``)
        locality = _sample(
            sch,
            list(PREFETCH_LOCALITIES),
            decisions.prefetch_locality if decisions else None,
        )
        sch.annotate(ro, PREFETCH_LOCALITY_ANNOTATION, locality)
    sch.vectorize(sch.get_loops(init)[-1])
    _, lane = sch.split(sch.get_loops(write)[-1], [None, lanes])
    sch.vectorize(lane)
    # 1. the block's input tiles transformed: per tile and vector of input channels
    v_block = _block_named(sch, INPUT)
    sch.compute_at(v_block, job, preserve_unit_loops=True)
    *_, xi, nu, p, c = sch.get_loops(v_block)
    co, cl = sch.split(c, [None, lanes])
    sch.reorder(p, co, xi, nu, cl)
    input_tile = sch.fuse(p, co)
    _unroll_picking_loop(sch, nu)
    sch.vectorize(cl)
    _in_registers(sch, INPUT_ROWS, input_tile, by_row=0)
    if padded:
        sch.reverse_compute_at(last, job, preserve_unit_loops=True)
        _, lane = sch.split(sch.get_loops(last)[-1], [None, lanes])
        sch.vectorize(lane)


#: Output sizes from which a layer gets F(4x4, 3x3) / F(2x2, 3x3) (the rest: direct). F(2x2)
#: on ResNet-18's 7x7 layers ran the model faster on one machine and level with the direct
#: convolution on others, and its Winograd kernels make the cold build slower than the issue
#: allows (``bench/results/bench_winograd_*``): 7x7 stays direct in a build.
TILE_FROM = {4: 28, 2: 14}
#: Output sizes from which a model's tuning may time each tile on a layer (:func:`tile_options`):
#: a tune spends minutes, so a build's compile time does not weigh; the tuner times each way of
#: the layer, alone and in the model, and keeps the fastest (:mod:`mlc_jupyter.tune.winograd_layers`).
TUNE_TILE_FROM = {4: 28, 2: 7}
#: The largest transformed weight (bytes) a layer may get with F(4x4, 3x3) / F(2x2, 3x3): a
#: batch-1 convolution reads all of it at every call, and F(4x4)'s is 4x the direct weight,
#: F(2x2)'s under 2x. F(2x2) still gained in the model with the 7x7x512 layers' weight; F(4x4)
#: at 14x14x256 was no faster than F(2x2) there (``bench/results/bench_winograd_*``).
MAX_WEIGHT_BYTES = {4: 8 * 2**20, 2: 16 * 2**20}


def layer_key(call: Any) -> str:
    """What makes a Relax ``conv2d`` call's Winograd choice: its output and weight shapes and
    its padding (the layers of one key are one question: their kernels do the same work)."""
    shape = "x".join(str(int(d)) for d in call.ty.shape)
    weight = "x".join(str(int(d)) for d in expr_type(call.args[1]).shape)
    padding = ",".join(str(int(p)) for p in call.attrs.padding)
    return f"out {shape}, weight {weight}, padding {padding}"


#: A layer computed by the direct convolution, among a layer's ways (:func:`tile_options`).
DIRECT = 0


def _tiles_in_reach(call: Any, lanes: int, reach: Mapping[int, int]) -> list[int]:
    """The Winograd tiles (largest first) ``reach`` gives a Relax ``conv2d`` call: none when
    it is not NHWC/HWIO, not 3x3 stride 1, grouped, its weight not a constant, its channels do
    not fill vectors, the layer is too small or a tile's transformed weight too large."""
    attrs = call.attrs
    if (str(attrs.data_layout), str(attrs.kernel_layout), str(attrs.out_layout)) != (
        "NHWC", "HWIO", "NHWC",
    ):  # fmt: skip
        return []
    if [int(s) for s in attrs.strides] != [1, 1] or [int(d) for d in attrs.dilation] != [1, 1]:
        return []
    weight = constant_array(call.args[1])
    if weight is None or int(attrs.groups) != 1 or weight.shape[:2] != (3, 3):
        return []
    if str(weight.dtype) != "float32" or weight.shape[2] % lanes or weight.shape[3] % lanes:
        return []
    shape = [int(d) for d in call.ty.shape]
    out_h, out_w = shape[1], shape[2]
    return [
        m
        for m in (4, 2)
        if min(out_h, out_w) >= reach[m]
        and (m + 2) ** 2 * weight.shape[2] * weight.shape[3] * weight.itemsize
        <= MAX_WEIGHT_BYTES[m]
    ]


def plan_for(
    call: Any, lanes: int, registers: int, tiles: Mapping[str, int] | None = None
) -> Plan | None:
    """The Winograd plan of a Relax ``conv2d`` call, or ``None`` where the direct convolution
    is the default: the largest tile :data:`TILE_FROM` reaches (:func:`_tiles_in_reach`).
    ``tiles`` maps a layer (:func:`layer_key`) to the way a tuning chose for it (a tile, or
    :data:`DIRECT`), one of its :func:`tile_options`."""
    if tiles:
        chosen = tiles.get(layer_key(call))
        if chosen is not None and chosen in tile_options(call, lanes):
            return _plan(call, chosen, registers) if chosen != DIRECT else None
    reached = _tiles_in_reach(call, lanes, TILE_FROM)
    return _plan(call, reached[0], registers) if reached else None


def _plan(call: Any, m: int, registers: int) -> Plan:
    width = int(call.ty.shape[2])
    return Plan(m, rule_row_tile(math.ceil(width / m), registers))


def tile_options(call: Any, lanes: int) -> list[int]:
    """The ways a model's tuning may compute a layer: :data:`DIRECT` and each tile
    :data:`TUNE_TILE_FROM` reaches (only the direct convolution where Winograd does not apply)."""
    return [DIRECT, *sorted(_tiles_in_reach(call, lanes, TUNE_TILE_FROM))]


def rule_rows(registers: int) -> int:
    """Rows (tiles) of the matrix products' register tile by the default rule, at most."""
    return 4 if registers <= 16 else 8


def rule_row_tile(tile_cols: int, registers: int) -> int:
    """The register tile a row of ``tile_cols`` tiles is padded for: the one of at most
    :func:`rule_rows` tiles that wastes least, a row tile of ``r`` counted ``(r + 1) / r`` per
    tile (it loads a weight vector for every ``r`` rows of FMAs), so 13 tiles take 7 (14 padded),
    not 1 (a one-row tile) nor 8 (16 padded)."""
    return min(
        range(1, rule_rows(registers) + 1),
        key=lambda r: (math.ceil(tile_cols / r) * (r + 1), -r),
    )


def rule_decisions(rows: int, vectors: list[int], registers: int, reduction: int) -> Decisions:
    """The default register tile of the matrix products: ``rows`` tiles by as many of
    ``vectors`` (the space's choices) vectors of output channels as fit, the ``reduction`` (input
    channels) unrolled as the matmul micro-kernel's rule unrolls its ``k``."""
    fitting = max(v for v in vectors if v == 1 or fits_registers(rows, v, registers))
    return Decisions(rows, fitting, min(rule_k_unroll(reduction), MAX_UNROLL))


def product_extents(func: Any) -> tuple[int, int, int]:
    """The padded tile count, output channels and input channels (the reduction) of a Winograd
    kernel's matrix products (scheduled or not: ``decompose_reduction`` renames the block)."""
    for block in blocks(func.body):
        if str(block.name_hint) in (PRODUCT, PRODUCT + "_update"):
            extents = [int(iv.dom.extent) for iv in block.iter_vars]
            return extents[2], extents[3], extents[4]
    raise LookupError(PRODUCT)


def rule_decisions_for(func: Any, lanes: int, registers: int, cores: int) -> Decisions:
    """The default decisions of a Winograd kernel: one row of tiles per job, or, where the
    transformed weight is over :data:`WEIGHT_PER_JOB_BYTES` and the channels split, half of them
    per job (over all the rows where that still gives every core a job); :func:`rule_decisions`'
    register tile on the most rows up to :func:`rule_rows` that divide a job's tiles; the weight's
    next slice prefetched into the second-level cache where the register tile passes over each
    slice at most :data:`FEW_PASSES` times, into every cache otherwise."""
    options = choices(func, lanes)
    _, channels, reduction = product_extents(func)
    alpha = tile_of(func) + 2
    weight_bytes = alpha * alpha * reduction * channels * 4
    tile_rows, _ = tile_grid(func)
    block_rows, k_split = 1, 1
    if weight_bytes > WEIGHT_PER_JOB_BYTES and options.k_splits[-1] > 1:
        k_split = options.k_splits[-1]
        block_rows = tile_rows if cores <= k_split else 1
    wanted = rule_rows(registers)
    rows = max(r for r in options.rows if r <= wanted and fits_job(func, r, block_rows))
    tile = rule_decisions(rows, options.vectors, registers, reduction)
    _, tile_cols = tile_grid(func)
    few = tile_cols * block_rows // rows <= FEW_PASSES
    locality = PREFETCH_LOCALITIES[1] if few else PREFETCH_LOCALITIES[0]
    return Decisions(tile.rows, tile.vectors, tile.unroll, block_rows, k_split, locality)


def legalize(call: Any, bb: Any, plan: Plan) -> Any:
    """``call`` (a Relax conv2d) as a Winograd kernel on its weight transformed now."""
    weight = transformed_weight(constant_array(call.args[1]), plan.m)
    pad = [int(p) for p in call.attrs.padding]
    top, left, bottom, right = pad if len(pad) == 4 else (pad[0], pad[1], pad[0], pad[1])
    return bb.call_te(
        lambda data, u: winograd_compute(data, u, (top, left, bottom, right), plan),
        call.args[0],
        tvm().relax.const(weight),
        primfunc_name_hint="conv2d_winograd",
        primfunc_attrs={"op_pattern": 4},  # output-elementwise fusable: the epilogue fuses
    )


def flops_as_written(func: Any) -> float | None:
    """The FLOPs of the convolution a Winograd kernel computes, counted as the direct convolution
    does them (``2 x outputs x C x 9``), ``None`` for any other kernel. A race rates every build
    of a model, and every runtime, on this count: the work the model asks for, not the fewer
    multiplications one algorithm makes of it."""
    if tile_of(func) is None:
        return None
    _, _, channels = product_extents(func)
    output = param_buffers(func)[-1]  # destination-passing: the output is last
    return 2.0 * math.prod(int(d) for d in output.shape) * channels * 9


def tile_of(func: Any) -> int | None:
    """The output tile ``m`` of a Winograd kernel (``None`` for any other kernel)."""
    for block in blocks(func.body):
        if str(block.name_hint) == OUTPUT:
            return int(block.iter_vars[0].dom.extent)
    return None
