"""Helpers behind the trace tests' fixtures: the book's chapter 4 schedule and a tiny real tune run."""

from __future__ import annotations


def book_matmul(n: int = 128) -> str:
    """The book's chapter 4 ``MyModule``, an ``n``-cubed matmul, in the course's own spelling."""
    return f"""
@tvm.script.ir_module
class MyModule:
    @T.prim_func
    def main(
        A: T.Buffer(({n}, {n}), "float32"),
        B: T.Buffer(({n}, {n}), "float32"),
        C: T.Buffer(({n}, {n}), "float32"),
    ):
        T.func_attr({{"global_symbol": "main", "tir.noalias": True}})
        for i, j, k in T.grid({n}, {n}, {n}):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = 0.0
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
"""


BOOK_MODULE = book_matmul()


def stochastic_schedule_mm(sch):
    block_C = sch.get_sblock("C", "main")  # noqa: N806 - the book's name
    i, j, k = sch.get_loops(block=block_C)
    j_factors = sch.sample_perfect_tile(loop=j, n=2)
    j_0, j_1 = sch.split(loop=j, factors=j_factors)
    sch.reorder(i, j_0, k, j_1)
    sch.decompose_reduction(block_C, k)
    return sch


def make_book():
    """``MyModule`` and a schedule of it whose tile decision is the book's [16, 8]."""
    from mlc_jupyter import parse_tir
    from mlc_jupyter.tvm_compat import Schedule

    mod = parse_tir(BOOK_MODULE)
    for seed in range(1, 200):
        sch = stochastic_schedule_mm(Schedule(mod, seed=seed))
        if [int(x) for x in next(iter(sch.trace.decisions.values()))] == [16, 8]:
            return mod, sch
    raise AssertionError("no seed gave the book's [16, 8]")


def make_tune_result(tmp_path_factory):
    """A real ``tune()`` of a 64x64 matmul (8 trials): a trace with postprocessing steps."""
    from tvm import te

    from mlc_jupyter.tune import tune

    a = te.placeholder((64, 64), name="A")
    b = te.placeholder((64, 64), name="B")
    k = te.reduce_axis((0, 64), name="k")
    c = te.compute((64, 64), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="C")
    work = tmp_path_factory.mktemp("trace_tune")
    return tune(te.create_prim_func([a, b, c]), trials=8, per_iter=8, work_dir=work, seed=0)
