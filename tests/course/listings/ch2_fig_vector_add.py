# Book §2.2, Fig. 2.2.1 (repeated as Fig. 2.2.3): the typical elements of a primitive tensor function.
# As printed; no repairs. Course spelling: tir as T, T.Buffer[...] subscript, bare @T.prim_func, T.block.
# ruff: noqa
# fmt: off

from tvm.script import tir as T

@T.prim_func
def main(A: T.Buffer[128, "float32"],
        B: T.Buffer[128, "float32"],
        C: T.Buffer[128, "float32"]):
    for i in range(128):
        with T.block("C"):
            vi = T.axis.spatial(128, i)
            C[vi] = A[vi] + B[vi]
