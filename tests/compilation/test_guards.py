"""Guarded accesses proved inside their buffers: a block predicate, ``T.if_then_else`` padding and
a ``likely`` if, each with a bound that keeps the access inside and one that lets it out."""

from __future__ import annotations

import pytest

from mlc_jupyter import tvm_compat
from mlc_jupyter.cells import parse_script
from mlc_jupyter.compilation.guards import guarded_in_bounds


def _predicated_split(n: int):
    """``B[i] = A[i]`` over ``n`` elements, split by 4: a ``T.where`` guards the tail."""
    te = tvm_compat.tvm().te
    a = te.placeholder((n,), name="A")
    b = te.compute((n,), lambda i: a[i], name="B")
    sch = tvm_compat.Schedule(te.create_prim_func([a, b]))
    (loop,) = sch.get_loops(tvm_compat.get_block(sch, "B"))
    sch.split(loop, factors=[None, 4])
    return sch.mod["main"]


def test_an_access_a_block_predicate_guards_is_proved_inside():
    found = guarded_in_bounds(_predicated_split(10), {"A", "B"})
    assert {str(b.name) for b, _, _ in found} == {"A", "B"}
    assert all(all(inside) for _, _, inside in found), [
        (str(b.name), inside) for b, _, inside in found
    ]


PADDED = """
@T.prim_func
def window(A: T.Buffer((14,), "float32"), B: T.Buffer((14,), "float32")):
    for i in range(14):
        with T.block("B"):
            vi = T.axis.spatial(14, i)
            B[vi] = T.if_then_else(vi + 1 < LIMIT, A[vi + 1], T.float32(0))
"""
LIKELY = """
@T.prim_func
def tail(A: T.Buffer((100,), "float32"), B: T.Buffer((100,), "float32")):
    for i0, i1 in T.grid(4, 32):
        if T.likely(i0 * 32 + i1 < LIMIT):
            B[i0 * 32 + i1] = A[i0 * 32 + i1]
"""


@pytest.mark.parametrize(
    ("source", "inside", "outside"),
    [(PADDED, 14, 15), (LIKELY, 100, 101)],
    ids=["if_then_else padding", "likely if"],
)
def test_a_condition_keeps_the_access_inside_only_while_it_bounds_the_index(
    source, inside, outside
):
    def verdicts(limit: int) -> list[bool]:
        func = parse_script(source.replace("LIMIT", str(limit)), kind="tir").value
        return [all(flags) for _, _, flags in guarded_in_bounds(func, {"A"})]

    assert verdicts(inside) == [True]
    assert verdicts(outside) == [False]


def test_only_the_named_buffers_are_reported():
    assert {str(b.name) for b, _, _ in guarded_in_bounds(_predicated_split(10), {"B"})} == {"B"}
