"""Normalisations over the last axis (layer norm, RMS norm) on CPUs: a row at a time.

TVM legalises ``R.nn.layer_norm`` into reductions over each row (the sum, then the sum of squared
differences from the mean) and an elementwise output that reads them. MetaSchedule's default
space gives each reduction its own parallel loop (a wake-up of the thread pool each), splits it
across threads with ``rfactor`` and leaves it scalar, so a transformer's layer norm costs several
times what reading its rows does. Here (:func:`schedule_row_norm`), as :mod:`.softmax_schedule`
does for softmax:

* the rows (every axis but the last) run in one parallel loop; for each row, each reduction in
  turn, then the output row, all while the row is in L1;
* each reduction is a vector reduction (``rfactor`` over the lanes: ``lanes`` partial results,
  folded at the end), the output vectorised;
* elementwise operators between them (the mean) and fused before them (a residual add) are
  inlined into their readers.

A kernel qualifies when every reduction reduces the last axis of the output's rows, the output
is the rows' full shape, and the row is a multiple of the vector lanes.

This module imports TVM at import time; import it lazily.
"""

from __future__ import annotations

from typing import Any

from ..tvm_compat import get_block, tir


class NotRowNorm(Exception):  # noqa: N818 - a verdict, not an error
    """The kernel is not a normalisation over its last axis this schedule applies to."""


def _reduces_rows(sch: Any, block: Any, rows: list[int], columns: int) -> bool:
    """Whether ``block`` is one reduction of each row over ``columns``, its loops row-major."""
    stmt = sch.get(block)
    reduce = tir().IterVar.CommReduce
    kinds = [int(iv.iter_type) for iv in stmt.iter_vars]
    extents = [int(iv.dom.extent) for iv in stmt.iter_vars]
    loops = [int(sch.get(loop).extent) for loop in sch.get_loops(block)]
    return (
        kinds[-1] == reduce
        and reduce not in kinds[:-1]
        and extents == [*rows, columns]
        and loops == extents
    )


def schedule_row_norm(sch: Any, lanes: int) -> None:
    """Apply the row-at-a-time structure to ``sch`` (one PrimFunc ``main``) in place (raises
    :class:`NotRowNorm` for any other kernel)."""
    blocks = list(sch.get_child_blocks(get_block(sch, "root")))
    out = blocks[-1]
    stmt = sch.get(out)
    if str(stmt.body.buffer.dtype) != "float32" or len(stmt.iter_vars) < 2:
        raise NotRowNorm("not a float32 kernel of rows")
    loops = list(sch.get_loops(out))
    extents = [int(sch.get(loop).extent) for loop in loops]
    axes = [int(iv.dom.extent) for iv in stmt.iter_vars]
    if extents != axes:
        raise NotRowNorm("the output's loops are not its axes")
    reduce = tir().IterVar.CommReduce
    if any(int(iv.iter_type) == reduce for iv in stmt.iter_vars):
        raise NotRowNorm("the output is a reduction")
    rows, columns = extents[:-1], extents[-1]
    if columns % lanes:
        raise NotRowNorm("the row is not a multiple of the vector lanes")
    reductions = []
    for block in blocks[:-1]:
        if any(int(iv.iter_type) == reduce for iv in sch.get(block).iter_vars):
            if not _reduces_rows(sch, block, rows, columns):
                raise NotRowNorm("a reduction other than over each row")
            reductions.append(block)
    if not reductions:
        raise NotRowNorm("no reduction")
    try:
        for block in blocks[:-1]:
            if not any(block.same_as(r) for r in reductions):
                sch.compute_inline(block)  # the mean; an add fused before the norm
    except Exception as err:  # noqa: BLE001 - TVM's ScheduleError
        raise NotRowNorm(f"a fused operator cannot be inlined: {type(err).__name__}") from None
    staged = []  # in dataflow order: each reduction's lane partials, then their fold
    for block in reductions:
        _, lane = sch.split(sch.get_loops(block)[-1], [None, lanes])
        staged += [sch.rfactor(lane, len(rows)), block]  # the lanes contiguous
    row = sch.fuse(*loops[:-1])
    for block in reversed(staged):  # consumers first: each producer lands inside the row
        sch.compute_at(block, row, preserve_unit_loops=False)
    sch.parallel(row)
    _, lane = sch.split(sch.get_loops(out)[-1], [None, lanes])
    sch.vectorize(lane)
    for partial in staged[::2]:
        lane, step = sch.get_loops(partial)[-2:]
        sch.reorder(step, lane)
        sch.vectorize(lane)
