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
