"""%mlc_isolate and %mlc_build --isolate in a real IPython shell: a kernel that crashes fails its
cell, the shell and its variables live on, the next call writes the caller's arrays, and
%mlc_time of an isolated build times it in the worker and says so."""

from __future__ import annotations

import numpy as np
from build_support import RELAX_ADD, SCATTER
from IPython.utils.capture import capture_output

from mlc_jupyter.errors import BuildError, KernelCrashError

ARRAYS = """import numpy as np
A = np.arange(16, dtype="float32")
idx = np.arange(16, dtype="int32")[::-1].copy()
idx[3] = 50_000_000
B = np.zeros(16, "float32")
"""


def test_under_mlc_isolate_on_a_crashing_kernel_fails_its_cell_and_the_shell_lives_on(shell):
    with capture_output() as said:
        shell.run_line_magic("mlc_isolate", "")
    assert said.stdout.startswith("isolated builds: off")
    try:
        with capture_output() as said:
            shell.run_line_magic("mlc_isolate", "on")
        assert said.stdout.startswith("isolated builds: on")
        shell.run_cell_magic("tir", "-q", SCATTER)
        with capture_output() as built:
            shell.run_line_magic("mlc_build", "scatter")
        assert "isolated (its functions run in a worker process" in built.stdout
        shell.run_cell(ARRAYS).raise_error()
        with capture_output() as shown:
            result = shell.run_cell("scatter_lib.scatter(A, idx, B)")
        error = result.error_in_exec
        assert isinstance(error, KernelCrashError), shown.stdout
        assert "scatter crashed with SIGSEGV" in shown.stdout and "--checked" in shown.stdout
        assert (
            "called with A: float32[16], idx: int32[16], B: float32[16] (written)" in shown.stdout
        )
        result = shell.run_cell("idx[3] = 12\nscatter_lib.scatter(A, idx, B)\nB")
        result.raise_error()  # the shell lived on, the next call works
        np.testing.assert_array_equal(shell.user_ns["B"], np.arange(16, dtype="float32")[::-1])
        with capture_output() as timed:
            report = shell.run_line_magic(
                "mlc_time", 'scatter_lib --args "(A, idx, B)" --repeat 2 --min-repeat-ms 5 -o'
            )
        assert report.timings[0].median_s > 0
        text = timed.outputs[0].data["text/plain"]
        assert "timed in its isolated worker (pid " in text, text
    finally:
        shell.run_line_magic("mlc_isolate", "off")


def test_isolate_on_one_build_leaves_the_others_in_process_and_a_relax_build_is_refused(shell):
    shell.run_cell_magic("tir", "-q", SCATTER)
    shell.run_line_magic("mlc_build", "scatter --isolate --as isolated")
    shell.run_line_magic("mlc_build", "scatter --as direct")
    assert shell.user_ns["isolated"].isolated and not shell.user_ns["direct"].isolated
    shell.run_cell(ARRAYS.replace("50_000_000", "12")).raise_error()
    for lib in ("isolated", "direct"):  # each writes the caller's B, in the worker or here
        shell.run_cell(f"B[:] = 0\n{lib}.scatter(A, idx, B)").raise_error()
        np.testing.assert_array_equal(shell.user_ns["B"], np.arange(16, dtype="float32")[::-1])
    shell.run_cell_magic("relax", "--quiet", RELAX_ADD)
    with capture_output() as shown:
        result = shell.run_cell("%mlc_build AddTwice --isolate")
    assert isinstance(result.error_in_exec, BuildError)
    assert "--isolate: a Relax VM executable is not isolated" in shown.stdout
