# Book §2.5.2 "Parallel, Vectorize and Unroll": the MyAdd module the schedule example starts from.
# Repair (PDF extraction): a page break inside the loop nest dropped the indentation of the block;
# it is re-indented under `for i, j in T.grid(4, 4):`. The schedule lines that follow in the book
# are Python, run by tests/course/test_ch2.py.
# ruff: noqa
# fmt: off
@tvm.script.ir_module
class MyAdd:
    @T.prim_func
    def add(A: T.Buffer((4, 4), "int64"),
            B: T.Buffer((4, 4), "int64"),
            C: T.Buffer((4, 4), "int64")):
        T.func_attr({"global_symbol": "add"})
        for i, j in T.grid(4, 4):
            with T.block("C"):
                vi = T.axis.spatial(4, i)
                vj = T.axis.spatial(4, j)
                C[vi, vj] = A[vi, vj] + B[vi, vj]
