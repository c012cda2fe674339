"""No out-of-bounds kernel runs unannounced: the static check at every build path, checked builds."""

from __future__ import annotations

import numpy as np
import pytest
from build_support import LISTINGS
from IPython.utils.capture import capture_output

from mlc_jupyter.cells import parse_script
from mlc_jupyter.compilation import build_module
from mlc_jupyter.compilation.bounds import find_out_of_bounds
from mlc_jupyter.errors import OutOfBoundsError

MM_RELU = (LISTINGS / "ch2_mm_relu.py").read_text()
#: The commonest beginner's slip: one element past the end of the output.
SHIFTED = MM_RELU.replace("C[vi, vj] = T.max", "C[vi + 1, vj] = T.max")
#: Its cell line: the magic line is line 1.
SHIFTED_LINE = 2 + next(
    n for n, text in enumerate(MM_RELU.splitlines()) if "C[vi, vj] = T.max" in text
)

GATHER = """
@T.prim_func
def gather(A: T.Buffer((128,), "float32"), I: T.Buffer((16,), "int32"),
           B: T.Buffer((16,), "float32")):
    for i in range(16):
        with T.block("B"):
            vi = T.axis.spatial(16, i)
            B[vi] = A[I[vi]]
"""

SPLIT_WITHOUT_PREDICATE = """b = sch.get_block("C")
i, j = sch.get_loops(b)
sch.reorder(j, i)
j0, j1 = sch.split(j, factors=[None, 5], disable_predication=True)
"""


def rendered(err: BaseException) -> str:
    return "\n".join(err._render_traceback_())


def test_an_index_shifted_past_the_end_is_refused_at_its_cell_line_before_anything_runs(shell):
    number = shell.execution_count
    shell.run_cell("%%tir --quiet\n" + SHIFTED, store_history=True)
    result = shell.run_cell("%mlc_build MyModule", store_history=True)
    err = result.error_in_exec
    assert isinstance(err, OutOfBoundsError)
    text = rendered(err)
    assert "C[vi + 1, vj]" in text and "index vi + 1 of dimension 0 reaches 1..128" in text
    assert "C allows 0..127" in text
    assert f"In [{number}] line {SHIFTED_LINE}" in text
    assert f"{SHIFTED_LINE:>4} |                 C[vi + 1, vj] = T.max" in text
    assert "nothing ran" in text
    assert "MyModule_lib" not in shell.user_ns
    assert len(text.splitlines()) <= 25


def test_every_listing_of_the_book_passes_the_static_check():
    namespace: dict = {}
    for path in sorted(LISTINGS.glob("*.py")):
        source = path.read_text()
        if "@T.prim_func" not in source and "@R.function" not in source:
            continue  # a Python listing (a BlockBuilder function), not a TVMScript cell
        kind = "relax" if "R." in source else "tir"
        parsed = parse_script(source, dict(namespace), kind=kind)
        for name, obj in parsed.objects.items():
            if hasattr(obj, "functions_items") or hasattr(obj, "body"):
                assert find_out_of_bounds(_module(obj)) == [], f"{path.name}: {name}"


def _module(obj):
    from mlc_jupyter.compilation.signatures import as_module

    return as_module(obj)


def test_a_schedule_step_that_drops_the_split_predicate_is_named_with_its_line(shell):
    shell.run_cell_magic("tir", "-q", MM_RELU)
    with capture_output():
        shell.run_cell_magic("mlc_schedule", "MyModule --static", SPLIT_WITHOUT_PREDICATE)
    with pytest.raises(OutOfBoundsError) as caught:
        build_module(shell.user_ns["MyModule_sch"])
    text = rendered(caught.value)
    assert 'block "C" binds vj = j_0 * 5 + j_1, which reaches 0..129' in text
    assert "introduced by schedule step 4 (%%mlc_schedule line 5)" in text
    assert "disable_predication=True" in text


def test_the_stepper_times_a_step_that_goes_out_of_bounds_as_a_failed_row(shell):
    from mlc_jupyter.schedule import ScheduleSession
    from mlc_jupyter.widgets.schedule_stepper import ScheduleStepper

    shell.run_cell_magic("tir", "-q", MM_RELU)
    session = ScheduleSession(shell.user_ns["MyModule"], SPLIT_WITHOUT_PREDICATE, first_line=2)
    stepper = ScheduleStepper(session)
    timing = stepper.time_step(4)
    assert timing.median_s is None
    assert "goes out of bounds" in timing.error and "schedule step 4" in timing.error
    assert "failed:" in stepper.status and "out of bounds" in stepper.status
    assert stepper.time_step(2).median_s is not None  # the steps before it still time


def test_a_data_dependent_index_raises_in_a_checked_build_and_leaves_memory_intact(shell):
    shell.run_cell_magic("tir", "-q", GATHER)
    with capture_output() as out:
        shell.run_line_magic("mlc_build", "gather --checked")
    assert "checked (every buffer index is tested at run time)" in out.stdout
    lib = shell.user_ns["gather_lib"]
    a = np.arange(128, dtype="float32")
    np.testing.assert_array_equal(lib.gather(a, np.arange(16, dtype="int32") * 2), a[:32:2])
    bad = np.arange(16, dtype="int32")
    bad[5] = 100_000
    out_buffer = np.full(16, -1.0, "float32")
    with pytest.raises(OutOfBoundsError) as caught:
        lib.gather(a, bad, out_buffer)
    text = rendered(caught.value)
    assert "gather: an index left its buffer at run time" in text
    assert "data-dependent index: gather: A[" in text and "line 9" in text
    np.testing.assert_array_equal(out_buffer, -1.0)  # nothing was copied back


def test_checked_builds_can_be_switched_on_for_the_session(shell, monkeypatch):
    monkeypatch.setenv("MLC_JUPYTER_CHECKED", "0")
    shell.run_cell_magic("tir", "-q", GATHER)
    with capture_output() as out:
        shell.run_line_magic("mlc_checked", "on")
        shell.run_line_magic("mlc_build", "gather")
        shell.run_line_magic("mlc_checked", "off")
        shell.run_line_magic("mlc_build", "gather --as plain")
    assert "checked builds: on" in out.stdout and "checked builds: off" in out.stdout
    assert shell.user_ns["gather_lib"].checked and not shell.user_ns["plain"].checked


def test_tuning_refuses_an_out_of_bounds_workload_before_it_runs_any_candidate(tmp_path):
    from mlc_jupyter.tune import tune

    mod = parse_script(SHIFTED, kind="tir").value
    with pytest.raises(OutOfBoundsError, match="C\\[vi \\+ 1, vj\\]"):
        tune(mod, trials=4, work_dir=tmp_path)
    assert not (tmp_path / "database_tuning_record.json").exists()
