# Book §3.4.3 "Dataflow Block": a `main` with two dataflow blocks (a standalone @R.function; it calls
# the module's "linear0" / "relu0" by name, so the test places it in a module next to them).
# Repairs (PDF extraction): two `R.call_dps_packed` lines wrapped with `↪` marks are joined back.
# ruff: noqa
# fmt: off
@R.function
def main(x: R.Tensor((1, "m"), "float32"),
         w0: R.Tensor(("n", "m"), "float32"),
         b0: R.Tensor(("n", ), "float32"),
         w1: R.Tensor(("k", "n"), "float32"),
         b1: R.Tensor(("k", ), "float32")):
    m, n, k = T.int64(), T.int64(), T.int64()

    with R.dataflow():
        lv0 = R.call_dps_packed("linear0", (x, w0, b0), R.Tensor((1, n), "float32"))
        gv0 = R.call_dps_packed("relu0", (lv0, ), R.Tensor((1, n), "float32"))
        R.output(gv0)

    with R.dataflow():
        out = R.call_dps_packed("linear0", (gv0, w1, b1), R.Tensor((1, k), "float32"))
        R.output(out)
    return out
