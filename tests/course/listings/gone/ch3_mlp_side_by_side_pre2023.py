# Book §3.4, the side-by-side listing next to the low-level NumPy `numpy_mlp`. As printed; no repairs.
# Pre-2023 illustrative syntax, "gone" in TVM 0.27 (course_dialect.md §1): bare `Tensor(...)`
# annotations, `R.call_tir(func, args, shape, dtype=...)` with a bare function name, `relax.output`.
# ruff: noqa
# fmt: off
@tvm.script.ir_module
class MyModule:
    @R.function
    def main(x: Tensor((1, 784), "float32"),
             w0: Tensor((128, 784), "float32"),
             b0: Tensor((128,), "float32"),
             w1: Tensor((10, 128), "float32"),
             b1: Tensor((10,), "float32")):
        with R.dataflow():
            lv0 = R.call_tir(linear0, (x, w0, b0), (1, 128), dtype="float32")
            lv1 = R.call_tir(relu0, (lv0, ), (1, 128), dtype="float32")
            out = R.call_tir(linear1, (lv1, w1, b1), (1, 10), dtype="float32")
            relax.output(out)
        return out
