# Book §5.3.3 "Deep Dive into Block Builder APIs": the module printed next to the BlockBuilder code.
# As printed; no repairs. Pre-2023 illustrative syntax, "gone" in TVM 0.27 (course_dialect.md §1):
# bare `Tensor(...)` annotations, `R.call_tir(te_matmul, (A, B), (128, 128), dtype="float32")`, and
# the prim_funcs it calls are not in the listing. ch5_blockbuilder_module_printed.py holds the same
# module as the course printed it in its later syntax.
# ruff: noqa
# fmt: off
@tvm.script.ir_module
class Module:
    @R.function
    def main(A: Tensor((128, 128), "float32"), B: Tensor((128, 128), "float32")):
        # block 0
        with R.dataflow():
            lv = R.call_tir(te_matmul, (A, B), (128, 128), dtype="float32")
            lv1 = R.call_tir(te_relu, (lv,), (128, 128), dtype="float32")
            gv: Tensor((128, 128), "float32") = lv1
            R.output(gv)
        return gv
