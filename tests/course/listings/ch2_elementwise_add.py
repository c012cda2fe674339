# Book §2.5.1 "Example: Element-wise Add": MyAdd (int64, 4x4).
# Book bug (not PDF damage, see course_inventory.md "Book bugs"): the book indents its build/run lines
# (`rt_lib = tvm.build(MyAdd, ...)` ... `np.testing.assert_allclose(...)`) inside the class body,
# which is not TVMScript; they are left out here and run by tests/course/test_ch2.py instead.
# ruff: noqa
# fmt: off
# TensorIR version
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
