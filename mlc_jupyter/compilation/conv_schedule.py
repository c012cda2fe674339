"""Direct convolution on CPUs: output channels in vector registers, a row of outputs blocked.

A model build converts every 2-D convolution to NHWC with HWIO weights (Relax's ``ConvertLayout``,
:func:`.default_schedule.legalize_and_fuse`), so the output channel is the innermost axis of the
output and of the weight: one vector load of the weight serves ``lanes`` output channels, and an
input element is one broadcast. The weight's new layout is a transpose of a constant, folded at
build time. Every kernel whose single reduction writes an NHWC tensor (convolutions, depthwise and
1x1 ones, max and average pooling, a mean over H and W) then gets one structure, written with
TensorIR's primitives (the GotoBLAS micro-kernel, applied to a convolution):

* the output tile is ``mr`` pixels of one row (or of the image's pixels taken as one axis, where
  a row's length divides into poor tiles: :func:`rule_decisions`) by ``nv`` vectors of channels,
  accumulated in a
  ``local`` cache of the output (``cache_write``), unrolled over ``mr`` and ``nv`` and vectorised
  over the lanes, so LLVM keeps the tile in registers; the reduction loops (kernel rows, kernel
  columns, input channels) run around it, the innermost split so that it can be unrolled;
* the tiles run in parallel, channel blocks outermost (each core keeps its part of the weight),
  then rows and blocks of pixels (the tuning space also tries pixels outermost, :data:`ORDERS`);
  the jobs of a channel block share out the prefetch of the next block's weight, which comes
  from memory at every model call (:func:`prefetch_weight`); a kernel that reduces over a
  window only (depthwise, pooling) has little weight to keep and takes pixels outermost
  (:func:`default_order`), and a depthwise kernel's columns are unrolled beside the tile, so
  that neighbouring pixels share the input columns they overlap on;
* the elementwise operators fused after the reduction (batch norm for inference, bias, ReLU, the
  residual add) are inlined into the write-back of the accumulators: each output is stored once;
* producers before it (the padding) run once, in parallel and vectorised, before the tiles; a
  copy (padding by zero pixels) is inlined, and so is the padding of a kernel that reduces over
  a window only (depthwise convolutions, pooling): memory-bound, it reads each input once
  instead of writing and reading a padded copy.

``mr``, ``nv`` and the unrolled reduction are sampling decisions (``sample_categorical``,
``sample_perfect_tile``): :func:`schedule_window` with ``decisions`` picks them by rule (the
default build), without it MetaSchedule samples them (the tuning space, ``tune/spaces/conv.py``).
The rule: the largest tile whose accumulators, ``nv`` weight vectors and one broadcast fit the
vector registers (with a few left spare where there are only 16, :func:`spare_registers`), at
most :data:`MAX_VECTORS` vectors wide, ties to the wider one.

This module imports TVM at import time; import it lazily.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..tvm_compat import (
    PREFETCH_ANNOTATION,
    buffer_load,
    element_bytes,
    get_block,
    llvm_system_triple,
    region_buffer,
    tir,
    tvm,
    var_dtype,
    vector_bits,
)
from .targets import is_cpu
from .tir_walk import ir_nodes

#: The widest channel block, in vector registers.
MAX_VECTORS = 4
#: The longest row block the space samples.
MAX_ROWS = 16
#: The longest unrolled run of the innermost reduction loop the space samples.
MAX_UNROLL = 4
#: The widest depthwise window whose kernel columns are unrolled beside the tile.
MAX_WINDOW_COLUMNS = 7
#: The weight size above which a convolution prefetches its weight's next panel
#: (:func:`prefetch_weight`): a smaller one stays in the caches between calls, and its kernels
#: ran no faster with the prefetches (``bench/results/bench_weight_prefetch_*``).
PREFETCH_FROM_BYTES = 2**20


class NotWindow(Exception):  # noqa: N818 - a verdict, not an error
    """The kernel is not one this schedule applies to."""


@dataclass(frozen=True)
class VectorUnit:
    """What the register tile is sized for: lanes of the element type and vector registers."""

    lanes: int
    registers: int


def vector_unit(target: Any, dtype: str = "float32") -> VectorUnit:
    """Lanes of ``dtype`` per vector register and the register count of ``target``'s CPU."""
    bits = vector_bits(target) if is_cpu(target) else 128
    element = int(tvm().DataType(dtype).bits)
    triple = str(target.attrs.get("mtriple", "") or llvm_system_triple())
    registers = 32 if bits >= 512 or triple.startswith("aarch64") else 16
    return VectorUnit(max(1, bits // element), registers)


@dataclass(frozen=True)
class Window:
    """The reduction of a window kernel and the sizes its tile is chosen from."""

    block: Any
    before: list[Any]  # producers (padding), in order
    after: list[Any]  # elementwise consumers, in order; the last writes the kernel's output
    spatial: list[Any]  # loops of the output axes, in order (..., width, channel)
    reduction: list[Any]
    width: int
    channels: int
    lanes: int  # vector lanes used (the unit's, or fewer when the channels need it)
    dtype: str


def _is_reduction(sch: Any, block: Any) -> bool:
    reduce = tir().IterVar.CommReduce
    return any(int(iv.iter_type) == reduce for iv in sch.get(block).iter_vars)


def find_window(sch: Any, unit_lanes: int) -> Window:
    """The kernel's reduction and its surroundings (raises :class:`NotWindow` otherwise)."""
    _tir = tir()
    blocks = list(sch.get_child_blocks(get_block(sch, "root")))
    reductions = [i for i, b in enumerate(blocks) if _is_reduction(sch, b)]
    if len(reductions) != 1:
        raise NotWindow(f"{len(reductions)} reduction blocks")
    index = reductions[0]
    block = blocks[index]
    stmt = sch.get(block)
    if not isinstance(stmt.body, _tir.BufferStore):
        raise NotWindow("the reduction is not one store")
    spatial_vars = [iv.var for iv in stmt.iter_vars if int(iv.iter_type) == _tir.IterVar.DataPar]
    indices = list(stmt.body.indices)
    if len(indices) != 4 or len(spatial_vars) != 4:
        raise NotWindow("the output is not a 4-D (NHWC) tensor")
    if not all(
        isinstance(i, _tir.Var) and i.same_as(v) for i, v in zip(indices, spatial_vars, strict=True)
    ):
        raise NotWindow("the output is not indexed by its spatial axes in order")
    dtype = str(stmt.body.buffer.dtype)
    if not dtype.startswith("float"):
        raise NotWindow("not a floating-point reduction")
    loops = list(sch.get_loops(block))
    if len(loops) != len(stmt.iter_vars):
        raise NotWindow("the block is not directly under its own loops")
    kinds = [int(iv.iter_type) for iv in stmt.iter_vars]
    spatial = [lp for lp, k in zip(loops, kinds, strict=True) if k == _tir.IterVar.DataPar]
    reduction = [lp for lp, k in zip(loops, kinds, strict=True) if k != _tir.IterVar.DataPar]
    if kinds != sorted(kinds):
        raise NotWindow("reduction loops are not innermost")
    width = int(sch.get(spatial[-2]).extent)
    channels = int(sch.get(spatial[-1]).extent)
    lanes = next((w for w in (unit_lanes, 8, 4) if w <= unit_lanes and channels % w == 0), 0)
    if not lanes:
        raise NotWindow("the channels are not a multiple of 4")
    for other in blocks[:index] + blocks[index + 1 :]:
        if _is_reduction(sch, other):
            raise NotWindow("another reduction")
    return Window(
        block, blocks[:index], blocks[index + 1 :], spatial, reduction, width, channels, lanes,
        dtype,
    )  # fmt: skip


def _divisors(n: int, cap: int) -> list[int]:
    return [d for d in range(1, min(n, cap) + 1) if n % d == 0]


def tile_choices(window: Window) -> tuple[list[int], list[int]]:
    """The row blocks and channel vectors the tile is sampled from (divisors of the extents)."""
    return _divisors(window.width, MAX_ROWS), _divisors(
        window.channels // window.lanes, MAX_VECTORS
    )


def spare_registers(registers: int) -> int:
    """Vector registers a tile leaves free for LLVM on a CPU with ``registers`` of them.

    With 16 (AVX2), a tile that takes all of them (14 x 1) made LLVM's scheduler, which loads
    the next step's broadcasts early, rotate the accumulators through the stack: about half
    the speed of a 4 x 2 tile. With 32 (AVX-512) every tile that fits ran at full speed.
    """
    return 4 if registers <= 16 else 0


def fits_registers(rows: int, vectors: int, registers: int) -> bool:
    """Whether ``rows x vectors`` accumulators, the weight vectors and a broadcast fit, with
    :func:`spare_registers` left over."""
    return rows * vectors + vectors + 1 <= registers - spare_registers(registers)


def rule_tile(window: Window, registers: int) -> tuple[int, int]:
    """The default tile: most accumulators that fit the registers, ties to more vectors."""
    rows, vectors = tile_choices(window)
    fits = [(m, v) for m in rows for v in vectors if fits_registers(m, v, registers)]
    return max(fits, key=lambda mv: (mv[0] * mv[1], mv[1]))


def depthwise_rule_tile(sch: Any, window: Window, registers: int) -> tuple[int, int]:
    """The default tile of a window kernel: :func:`rule_tile`, except for a depthwise convolution
    (its kernel columns unrolled beside the tile, :func:`_kernel_column`):

    * on AVX2 (16 registers), a rule tile one vector wide takes two vectors where the
      accumulators fit with two registers spare. :func:`rule_tile` counts a weight vector per
      channel vector and a broadcast; a depthwise tile has no broadcast and reads each tap's
      weight vector once per row of the tile, so a row of one vector (MobileNet's 14x14 and 7x7
      layers) left half the registers idle;
    * with 32 registers, the tile holds at most half of them in accumulators: the input columns
      the unrolled kernel columns share stay in the other half. The rule's 14 x 2 made LLVM keep
      accumulators on the stack, and MobileNet's 112x112 to 28x28 depthwise layers ran slower
      than with a tile of 16 (``bench/results/bench_depthwise_tiles_*``)."""
    rows, vectors = rule_tile(window, registers)
    if not is_depthwise(sch, window):
        return rows, vectors
    row_choices, widths = tile_choices(window)
    if registers <= 16 and vectors == 1 and 2 in widths and 2 * rows <= registers - 2:
        return rows, 2
    if registers > 16 and rows * vectors > registers // 2:
        fits = [(m, v) for m in row_choices for v in widths if m * v <= registers // 2]
        return max(fits, key=lambda mv: (mv[0] * mv[1], mv[1]))
    return rows, vectors


#: What the parallel loop runs outermost: blocks of output channels (each core keeps its part of
#: the weights; the default) or rows of pixels (each core keeps its rows of the input).
ORDERS = ("channels", "pixels")


@dataclass(frozen=True)
class Decisions:
    """The sizes the default build chooses (the tuning space samples them instead).

    ``rows`` is the tile's pixels: of one row of the output, or, with ``across_rows``, of the
    image's pixels taken as one axis (:func:`rule_decisions`)."""

    rows: int
    vectors: int
    unroll: int = 1
    across_rows: bool = False


def rule_decisions(sch: Any, window: Window, registers: int) -> Decisions:
    """The default build's tile: :func:`depthwise_rule_tile`, or, for a convolution that
    reduces over input channels, a tile of pixels across rows where it holds more accumulators.

    On AVX2, a row of 14 or 7 pixels (the 14x14 and 7x7 layers of MobileNet and ResNet) divides
    into 7 pixels x 1 vector at best: every broadcast then feeds one FMA. Taking the image's pixels
    as one axis allows 4 pixels x 2 vectors, where each broadcast feeds two
    (``bench/bench_conv_tiles.py``); where the tile does not divide the pixels (49), the last
    tile's missing pixels are predicated off, and the rule counts them as lost accumulators. A
    depthwise convolution or a pooling keeps its rows: neighbouring pixels of a row share the
    input columns they overlap on (:func:`_kernel_column`).

    A convolution that reduces over input channels unrolls that reduction by up to
    :data:`MAX_UNROLL`: the loads of more of the weight's rows are in flight at once, and a
    weight that comes from memory, as a large one does once per model call, streams faster; the
    tile's time with its weight in the cache stays (``bench/bench_conv_unroll.py``)."""
    rows, vectors = depthwise_rule_tile(sch, window, registers)
    extents = [int(sch.get(loop).extent) for loop in window.reduction]
    if len(extents) != 3 or extents[-1] == 1:  # pooling, a mean, a depthwise convolution
        return Decisions(rows, vectors)
    unroll = max(_divisors(extents[-1], MAX_UNROLL))
    pixels = _pixels(sch, window)
    widths = [v for v in tile_choices(window)[1] if v > 1]  # a broadcast feeding two FMAs or more
    fits = [
        (m, v)
        for m in range(1, min(pixels, MAX_ROWS) + 1)
        for v in widths
        if fits_registers(m, v, registers)
    ]
    if registers > 16 or not fits:  # measured on AVX2 only; a row tiles well with 32
        return Decisions(rows, vectors, unroll)

    def used(mv: tuple[int, int]) -> tuple[float, int]:
        m, v = mv
        return m * v * pixels / (-(-pixels // m) * m), v  # accumulators that hold pixels

    m, v = max(fits, key=used)
    if used((m, v))[0] > rows * vectors:
        return Decisions(m, v, unroll, across_rows=True)
    return Decisions(rows, vectors, unroll)


def _pixels(sch: Any, window: Window) -> int:
    """The output's pixels per image (height x width)."""
    return int(sch.get(window.spatial[-3]).extent) * window.width


def _pixels_as_one_axis(sch: Any, window: Window) -> Window:
    """``window`` with its block's height and width iterated as one axis of pixels."""
    width, pixels = window.width, _pixels(sch, window)
    arity = len(sch.get(window.block).iter_vars)

    def fused(*iters: Any) -> list[Any]:
        *images, y, x, channel = iters[:4]
        return [*images, y * tir().const(width, var_dtype(y)) + x, channel, *iters[4:]]

    dtype = var_dtype(sch.get(window.block).iter_vars[0].var)
    sch.transform_block_layout(
        window.block, tir().IndexMap.from_func(fused, ndim=arity, index_dtype=dtype)
    )
    loops = list(sch.get_loops(window.block))
    spatial = len(window.spatial) - 1
    return Window(
        window.block, window.before, window.after, loops[:spatial], loops[spatial:],
        pixels, window.channels, window.lanes, window.dtype,
    )  # fmt: skip


def schedule_window(
    sch: Any, unit: VectorUnit, decisions: Decisions | None = None, order: str | None = None
) -> None:
    """Apply the direct-convolution structure to ``sch`` (one PrimFunc ``main``) in place:
    sizes from ``decisions``, or sampled when it is ``None``; ``order`` as :func:`default_order`
    when it is ``None``."""
    window = find_window(sch, unit.lanes)
    lanes = window.lanes
    window_only = _reads_a_window_only(sch, window)
    order = order or default_order(sch, window)
    producers = []
    for block in window.before:
        if _is_copy(sch, block):
            sch.compute_inline(block)  # padding by zero pixels
        else:
            producers.append(block)
    for block in window.after[:-1]:
        try:
            sch.compute_inline(block)
        except Exception as err:  # noqa: BLE001 - TVM's ScheduleError
            raise NotWindow(f"an epilogue cannot be inlined: {type(err).__name__}") from None
    chosen = decisions or Decisions(*rule_tile(window, unit.registers))
    rows_of_image = window
    if chosen.across_rows:
        window = _pixels_as_one_axis(sch, window)
    rows, vectors = tile_choices(window)
    if chosen.across_rows:  # a tile that does not divide the pixels: the last one predicated
        rows = sorted({*rows, chosen.rows})
    mr = sch.sample_categorical(
        rows, [1.0 / len(rows)] * len(rows), decision=rows.index(chosen.rows) if decisions else None
    )
    nv = sch.sample_categorical(
        vectors,
        [1.0 / len(vectors)] * len(vectors),
        decision=vectors.index(chosen.vectors) if decisions else None,
    )
    *outer_axes, x, f = window.spatial
    xo, xi = sch.split(x, [None, mr])
    fo, fv, fl = sch.split(f, [None, nv, lanes])
    red = list(window.reduction)
    column = _kernel_column(sch, red) if window_only else None
    inner = red[-1]
    extent = int(sch.get(inner).extent)
    tile = sch.sample_perfect_tile(
        inner,
        n=2,
        max_innermost_factor=MAX_UNROLL,
        decision=[extent // chosen.unroll, chosen.unroll] if decisions else None,
    )
    ro, ri = sch.split(inner, tile)
    tiles = [fo, *outer_axes, xo] if order == "channels" else [*outer_axes, xo, fo]
    if column is None:
        sch.reorder(*tiles, *red[:-1], ro, ri, xi, fv, fl)
    else:  # the kernel's columns next to the tile's pixels: neighbours share their loads
        sch.reorder(
            *tiles, *[r for r in red[:-1] if not r.same_as(column)], ro, ri, column, xi, fv, fl
        )
        sch.unroll(column)
    outer = sch.fuse(*tiles)
    sch.parallel(outer)
    write = sch.cache_write(window.block, 0, "local")
    if window.after:
        try:
            sch.reverse_compute_inline(window.after[-1])
        except Exception as err:  # noqa: BLE001 - TVM's ScheduleError
            raise NotWindow(f"the epilogue cannot follow the tile: {type(err).__name__}") from None
    if chosen.across_rows:  # the accumulators and their write-back by pixel, as the tile runs
        width = rows_of_image.width

        def by_pixel(image: Any, y: Any, x: Any, channel: Any) -> list[Any]:
            return [image, y * tir().const(width, var_dtype(y)) + x, channel]

        sch.transform_layout(window.block, ("write", 0), by_pixel)
        sch.transform_block_layout(write, by_pixel)
    sch.reverse_compute_at(write, outer, preserve_unit_loops=True)  # same loops for any tile
    sch.unroll(ri)
    sch.unroll(xi)
    sch.unroll(fv)
    sch.vectorize(fl)
    first_reduction = red[0] if len(red) > 1 else ro
    init = sch.decompose_reduction(window.block, first_reduction)
    if order == "channels" and not window_only and len(red) == 3:
        # the rows of a channel block share out the prefetch of the next block's weight
        prefetch_weight(sch, window.block, ro, list(range(1, len(window.spatial) - 1)))
    sch.vectorize(sch.get_loops(init)[-1])
    _, lane = sch.split(sch.get_loops(write)[-1], [None, lanes])
    sch.vectorize(lane)
    for block in producers:
        if window_only:
            sch.compute_inline(block)  # the padding's bounds checks go into the tile's loads
        else:
            _parallel_vectorised(sch, block, lanes)


def prefetch_weight(sch: Any, block: Any, loop: Any, picks: list[int]) -> bool:
    """Annotate ``loop`` to prefetch the next panel of ``block``'s weight: the read that none of
    the block's iteration variables at positions ``picks`` (the pixels, or the tiles, of the
    output) index, where it has more than :data:`PREFETCH_FROM_BYTES`. As the matrix product's
    micro-kernel does (:mod:`~mlc_jupyter.tvm_compat.prefetch`): a batch-1 model reads a large
    weight from memory at every call, and its panels arrive while the loops over the current one
    compute. Returns whether it annotated the loop."""
    stmt = sch.get(block)
    picking = [stmt.iter_vars[n].var for n in picks]
    weight = [
        n
        for n, region in enumerate(stmt.reads)
        if not any(_uses(r.min, picking) for r in region.region)
    ]
    if len(weight) == 1 and _bytes(region_buffer(stmt.reads[weight[0]])) > PREFETCH_FROM_BYTES:
        sch.annotate(loop, PREFETCH_ANNOTATION, weight[0])
        return True
    return False


def _bytes(buffer: Any) -> int:
    return math.prod(int(d) for d in buffer.shape) * element_bytes(buffer.dtype)


def _uses(expr: Any, variables: list[Any]) -> bool:
    return any(any(node.same_as(v) for v in variables) for node, _ in ir_nodes(expr))


def default_order(sch: Any, window: Window) -> str:
    """The default build's :data:`ORDERS` choice: pixels outermost for a kernel that reduces
    over a window only (each core streams its own rows of the input and output, whole cache
    lines of every pixel's channels), channel blocks outermost for the others."""
    return "pixels" if _reads_a_window_only(sch, window) else "channels"


def _kernel_column(sch: Any, reduction: list[Any]) -> Any | None:
    """The kernel-column loop of a depthwise convolution's window (rows, columns, one
    input channel), unrolled next to the tile so that the pixels of a row share the loads of
    the input columns they overlap on; ``None`` for other window kernels."""
    extents = [int(sch.get(loop).extent) for loop in reduction]
    if len(extents) != 3 or extents[2] != 1 or not 1 < extents[1] <= MAX_WINDOW_COLUMNS:
        return None
    return reduction[1]


def is_depthwise(sch: Any, window: Window) -> bool:
    """Whether ``window`` is a depthwise convolution's (its kernel columns unrolled beside the
    tile: :func:`_kernel_column`)."""
    return _kernel_column(sch, list(window.reduction)) is not None


def _reads_a_window_only(sch: Any, window: Window) -> bool:
    """Whether each output reduces over a window of kernel rows and columns only (a depthwise
    convolution, a pooling): a memory-bound kernel, which a padded copy of its input made
    before the tiles would add a write and a read of the whole input to."""
    return sum(int(sch.get(loop).extent) > 1 for loop in window.reduction) <= 2


def _is_copy(sch: Any, block: Any) -> bool:
    body = sch.get(block).body
    return isinstance(body, tir().BufferStore) and buffer_load(body.value) is not None


def _parallel_vectorised(sch: Any, block: Any, lanes: int) -> None:
    """A producer at the root (the padded copy of the input): its rows in parallel, each row's
    pixels in a loop of their own and the channels vectorised, or unrolled when there are fewer
    than a vector of them (an RGB image).

    Rows, not pixels, are the parallel unit: a loop over all pixels divided and took the
    remainder by the row length at every pixel, which cost a stem convolution's padded copy of a
    three-channel image more than the copy itself (measured in f9f9ab3's message)."""
    *rows, channels = sch.get_loops(block)
    if len(rows) > 1:
        rows = rows[:-1]  # the row's pixels stay a loop of their own
    if rows:
        sch.parallel(sch.fuse(*rows) if len(rows) > 1 else rows[0])
    extent = int(sch.get(channels).extent)
    if extent % lanes == 0:
        _, lane = sch.split(channels, [None, lanes])
        sch.vectorize(lane)
    elif extent < lanes:
        sch.unroll(channels)
