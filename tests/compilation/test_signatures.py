"""Signatures of built functions: a scalar parameter (``n: T.int32``) is a number the caller
passes, through %mlc_build's functions, %mlc_time's --args and the inputs made for timing."""

from __future__ import annotations

import numpy as np
import pytest
from build_support import SCALE_BY_N

from mlc_jupyter.compilation.signatures import Param, Signature
from mlc_jupyter.errors import TimingError
from mlc_jupyter.measure.inputs import random_inputs

SCALE = "%%tir" + SCALE_BY_N


def _run(shell, source: str):
    result = shell.run_cell(source)
    assert result.error_in_exec is None, result.error_in_exec
    return result.result


@pytest.fixture
def scale_lib(shell):
    _run(shell, SCALE)
    _run(shell, "%mlc_build scale")
    _run(
        shell, "import numpy as np\na = np.arange(64, dtype='float32')\nb = np.zeros(64, 'float32')"
    )
    return shell


def test_a_kernel_with_a_scalar_parameter_builds_and_takes_a_number(scale_lib):
    shell = scale_lib
    sig = shell.user_ns["scale_lib"].signatures["scale"]
    assert sig.params[2] == Param("n", None, "int32", scalar=True)
    assert (
        shell.user_ns["scale_lib"].scale.__doc__
        == "scale(A: (64) float32, B: (64) float32, n: int32)"
    )
    _run(shell, "scale_lib(a, b, 3)")
    np.testing.assert_array_equal(shell.user_ns["b"], np.arange(64, dtype="float32") * 3)
    _run(shell, "scale_lib(a, b, np.int64(2))")  # a NumPy number is a number too
    np.testing.assert_array_equal(shell.user_ns["b"], np.arange(64, dtype="float32") * 2)
    # TVM tensors on the build's device are written in place, the scalar passed beside them
    _run(
        shell,
        "import tvm\nta, tb = tvm.runtime.tensor(a), tvm.runtime.tensor(b)\nscale_lib(ta, tb, 4)",
    )
    np.testing.assert_array_equal(shell.user_ns["tb"].numpy(), np.arange(64, dtype="float32") * 4)


@pytest.mark.parametrize(
    ("argument", "message"),
    [
        ("2.5", "scale: argument 'n' is 2.5, expected n: int32 (a whole number)"),
        ("a", "scale: argument 'n' has shape (64,), expected n: int32 (a number)"),
        ("'3'", "scale: argument 'n' is a str, expected n: int32 (a number)"),
        ("2**40", "scale: argument 'n' is 1099511627776, outside int32's range"),
    ],
)
def test_a_scalar_argument_that_is_not_the_number_asked_for_is_named(scale_lib, argument, message):
    result = scale_lib.run_cell(f"scale_lib(a, b, {argument})")
    assert type(result.error_in_exec).__name__ == "CallError"
    assert message in str(result.error_in_exec)


def test_mlc_time_asks_for_args_for_an_integer_scalar_and_times_with_them(scale_lib):
    result = scale_lib.run_cell("%mlc_time scale_lib")
    assert isinstance(result.error_in_exec, TimingError)
    text = str(result.error_in_exec)
    assert "cannot make an input for 'n': it is a scalar (int32)" in text
    assert "pass every argument with --args, in order: (A, B, n)" in result.error_in_exec.hint
    report = _run(
        scale_lib,
        '%mlc_time scale_lib --args "(a, b, 3)" --ref "A * n" --repeat 3 --min-repeat-ms 5 -o',
    )
    assert report.timings[0].correct is True, report.timings
    assert [t.correct for t in report.timings if t.error is None] == [True] * len(
        [t for t in report.timings if t.error is None]
    )


def test_a_floating_point_scalar_gets_a_seeded_random_value():
    sig = Signature(
        "axpy",
        (Param("X", (4,), "float32"), Param("alpha", None, "float32", scalar=True),
         Param("Y", (4,), "float32")),
        1,
    )  # fmt: skip
    first, second = random_inputs(sig, seed=0), random_inputs(sig, seed=0)
    assert isinstance(first[1], float) and 0.0 <= first[1] < 1.0
    assert first[1] == second[1] and np.array_equal(first[0], second[0])


def test_the_books_plain_python_passes_a_scalar_to_a_built_function_and_its_timer(shell):
    _run(shell, SCALE.replace("%%tir", "%%tir Scale"))
    _run(
        shell,
        "import numpy as np\nimport tvm\n"
        'rt_lib = tvm.build(Scale, target="llvm")\n'
        "a_nd = tvm.nd.array(np.arange(64, dtype='float32'))\n"
        "b_nd = tvm.nd.empty((64,), dtype='float32')\n"
        'rt_lib["scale"](a_nd, b_nd, 5)\n'
        'timing = rt_lib.time_evaluator("scale", tvm.cpu())(a_nd, b_nd, 6)\n',
    )
    ns = shell.user_ns
    np.testing.assert_array_equal(ns["b_nd"].numpy(), np.arange(64, dtype="float32") * 6)
    assert ns["timing"].mean > 0
