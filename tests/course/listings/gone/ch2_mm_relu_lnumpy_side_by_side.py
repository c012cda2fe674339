# Book §2.4.3, the side-by-side listing: MyModule's TVMScript header over the low-level-NumPy body
# (python loops, `if k == 0`, builtin `max`). As printed; no repairs.
# Illustrative, not expected to parse: Python's builtin `max` cannot compare a TVM expression.
# ruff: noqa
# fmt: off
@tvm.script.ir_module
class MyModule:
    @T.prim_func
    def mm_relu(A: T.Buffer((128, 128), "float32"),
                B: T.Buffer((128, 128), "float32"),
                C: T.Buffer((128, 128), "float32")):
        T.func_attr({"global_symbol": "mm_relu", "tir.noalias": True})
        Y = T.alloc_buffer((128, 128), dtype="float32")
        for i in range(128):
            for j in range(128):
                for k in range(128):
                    if k == 0:
                        Y[i, j] = 0
                    Y[i, j] = Y[i, j] + A[i, k] * B[k, j]
        for i in range(128):
            for j in range(128):
                C[i, j] = max(Y[i, j], 0)
