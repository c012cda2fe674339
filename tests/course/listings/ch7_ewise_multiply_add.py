# Book §7.3 "Pattern Match and Rewriting": MyModule with relax.op.multiply / relax.op.add written
# inside TVMScript. As printed; no repairs. `relax` comes from the chapter's import cell.
# ruff: noqa
# fmt: off
@tvm.script.ir_module
class MyModule:
    @R.function
    def main(x: R.Tensor((3, 4), "float32"), y: R.Tensor((3, 4), "float32")):
        with R.dataflow():
            lv0 = relax.op.multiply(x, y)
            gv0 = relax.op.add(lv0, y)
            R.output(gv0)
        return gv0
