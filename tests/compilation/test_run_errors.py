"""A kernel or Relax VM that fails at run time says why in one line, with TVM's reason."""

from __future__ import annotations

import numpy as np
import pytest

from mlc_jupyter.compilation import build_module
from mlc_jupyter.errors import CallError

SYMBOLIC_ADD = """
@I.ir_module
class M:
    @R.function
    def main(x: R.Tensor(("n", 4), "float32"), y: R.Tensor(("n", 4), "float32")):
        with R.dataflow():
            lv = R.add(x, y)
            R.output(lv)
        return lv
"""


def test_two_arguments_that_disagree_on_a_symbolic_size_name_the_parameter_and_sizes(shell):
    shell.run_cell_magic("relax", "--quiet", SYMBOLIC_ADD)
    built = build_module(shell.user_ns["M"])
    np.testing.assert_array_equal(built(np.ones((3, 4), "float32"), np.ones((3, 4), "float32")), 2)
    with pytest.raises(CallError) as info:
        built(np.ones((3, 4), "float32"), np.ones((5, 4), "float32"))
    message = str(info.value)
    assert message.startswith("main failed at run time: ")
    assert "param=y" in message and "shape[0] mismatch" in message and "(5 vs. 3)" in message
    assert "\n" not in message


def test_a_missing_extern_function_is_named_with_the_cell_line_that_calls_it(shell):
    from build_support import LISTINGS

    from mlc_jupyter.errors import BuildError

    source = (LISTINGS / "ch6_tmm16_intrin.py").read_text()
    call = next(n for n, text in enumerate(source.splitlines()) if "T.call_extern" in text)
    line = 1 + call  # the statement starts on the line before (T.evaluate), plus the magic line
    number = shell.execution_count
    shell.run_cell("%%tir --quiet\n" + source, store_history=True)
    built = build_module(shell.user_ns["tmm16_impl"])
    with pytest.raises(BuildError) as info:
        built["tmm16_impl"]
    assert f"extern symbol(s) tmm16 (called at In [{number}] line {line}) are not defined" in str(
        info.value
    )


RENAMED = """
@I.ir_module
class AddOne:
    @T.prim_func
    def add_one(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        T.func_attr({"global_symbol": "add", "tir.noalias": True})
        for i in range(4):
            with T.block("B"):
                vi = T.axis.spatial(4, i)
                B[vi] = A[vi] + T.float32(1)
"""


def test_a_function_renamed_after_its_global_symbol_was_written_is_still_callable(shell):
    from mlc_jupyter.measure import Sampling, time_module

    shell.run_cell_magic("tir", "--quiet", RENAMED)
    built = build_module(shell.user_ns["AddOne"])
    np.testing.assert_array_equal(built.add_one(np.zeros(4, "float32")), 1)
    assert time_module(built, sampling=Sampling(repeat=1, min_repeat_ms=1)).median_s > 0
