"""Softmax on CPUs: each row's exponentials computed once, in vector registers.

TVM legalises ``R.nn.softmax`` into four blocks (the row's maximum, the exponentials, their sum,
the division). MetaSchedule's default space inlines the exponentials into both their readers, so
each one is computed twice, and ``exp`` on a vector is a call to libm per lane. A CPU build here
legalises softmax with topi's ``fast_softmax`` instead (:func:`legalize_softmax`: the same four
steps, the exponential a polynomial that vectorises, within a few ULP of ``expf``) and
schedules the kernel as a row at a time (:func:`schedule_softmax`):

* the rows (every axis but the last) run in parallel; for each row, the maximum, then the
  exponentials stored once in the row's buffer (in L1), their sum, then the scaled output;
* the maximum and the sum are vector reductions (``rfactor`` over the lanes: ``lanes``
  partial results, folded at the end), the exponentials and the output vectorised;
* elementwise operators fused before the softmax (a scale) are inlined into its reads, and those
  fused after it (an attention mask's ``where``) into the write of the output.

This module imports TVM at import time; import it lazily.
"""

from __future__ import annotations

from typing import Any

from ..tvm_compat import get_block, tir, tvm

#: The blocks topi's softmax is made of, as it names them.
MAXIMUM, SUM, NORMALISE = "T_softmax_maxelem", "T_softmax_expsum", "T_softmax_norm"


class NotSoftmax(Exception):  # noqa: N818 - a verdict, not an error
    """The kernel is not a softmax over its last axis this schedule applies to."""


def legalize_softmax(bb: Any, call: Any) -> Any:
    """``R.nn.softmax`` as topi's ``fast_softmax`` (a Relax legalisation for a CPU build)."""
    _tvm = tvm()
    return bb.call_te(_tvm.topi.nn.fast_softmax, call.args[0], int(call.attrs.axis))


def _name(sch: Any, block: Any) -> str:
    return str(sch.get(block).name_hint)


def schedule_softmax(sch: Any, lanes: int) -> None:
    """Apply the row-at-a-time structure to ``sch`` (one PrimFunc ``main``) in place (raises
    :class:`NotSoftmax` for a kernel that is not a softmax over its last axis)."""
    blocks = list(sch.get_child_blocks(get_block(sch, "root")))
    names = [_name(sch, b) for b in blocks]
    if any(names.count(n) != 1 for n in (MAXIMUM, SUM, NORMALISE)):
        raise NotSoftmax("not one softmax")
    first, total, norm = (names.index(n) for n in (MAXIMUM, SUM, NORMALISE))
    stmt = sch.get(blocks[norm])
    rank = len(stmt.iter_vars)
    if (
        int(stmt.annotations.get("axis", -1)) != rank - 1
        or str(stmt.body.buffer.dtype) != "float32"
    ):
        raise NotSoftmax("not a float32 softmax over the last axis")
    reduce = tir().IterVar.CommReduce
    for index, block in enumerate(blocks):
        kinds = [int(iv.iter_type) for iv in sch.get(block).iter_vars]
        if index not in (first, total) and reduce in kinds:
            raise NotSoftmax("another reduction")
    producers = list(sch.get_producers(blocks[total]))
    if len(producers) != 1:
        raise NotSoftmax("the sum does not read one block of exponentials")
    exp = producers[0]
    exp_name = _name(sch, exp)
    try:
        for block in blocks[:first] + blocks[first + 1 : total]:
            if _name(sch, block) != exp_name:
                sch.compute_inline(block)  # a scale before; the difference from the maximum
        for block in blocks[total + 1 : -1]:
            sch.compute_inline(block)  # the division, a mask after it
    except Exception as err:  # noqa: BLE001 - TVM's ScheduleError
        raise NotSoftmax(f"a fused operator cannot be inlined: {type(err).__name__}") from None
    out = blocks[-1]
    loops = list(sch.get_loops(out))
    if len(loops) != rank:
        raise NotSoftmax("the output is not the softmax's shape")
    columns = int(sch.get(loops[-1]).extent)
    if columns % lanes:
        raise NotSoftmax("the row is not a multiple of the vector lanes")
    if rank < 2:
        raise NotSoftmax("a softmax of one row")
    partials = []
    for block in (blocks[first], blocks[total]):  # lanes partial results, folded at the end
        _, lane = sch.split(sch.get_loops(block)[-1], [None, lanes])
        partials.append(sch.rfactor(lane, rank - 1))  # lanes contiguous
    row = sch.fuse(*loops[:-1])
    for block in (blocks[total], partials[1], exp, blocks[first], partials[0]):
        sch.compute_at(block, row, preserve_unit_loops=False)
    sch.parallel(row)
    _vectorise_last(sch, out, lanes)
    _vectorise_last(sch, exp, lanes)
    for partial in partials:
        lane, step = sch.get_loops(partial)[-2:]
        sch.reorder(step, lane)
        sch.vectorize(lane)


def _vectorise_last(sch: Any, block: Any, lanes: int) -> None:
    _, lane = sch.split(sch.get_loops(block)[-1], [None, lanes])
    sch.vectorize(lane)
