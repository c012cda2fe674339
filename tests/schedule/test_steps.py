"""``%%mlc_schedule``: the book's chapter 2 schedules run step by step in a real IPython shell."""

from __future__ import annotations

from pathlib import Path

import pytest
from build_support import MM_RELU_STEPS

from mlc_jupyter import tvm_compat
from mlc_jupyter.errors import ScheduleStepError
from mlc_jupyter.schedule import export_steps, last_export, run_schedule_cell

LISTINGS = Path(__file__).parents[1] / "course" / "listings"

# The book's chapter 2 exercise module (course spelling).
BMM_RELU = (Path(__file__).parents[1] / "course" / "listings" / "ch2_bmm_relu.py").read_text()


# The exercise, in the order that works in TVM 0.27 (parallel/unroll/vectorize before
# decompose_reduction; see course_dialect.md).
BMM_STEPS = """Y = sch.get_block("Y", func_name="bmm_relu")
b, i, j, k = sch.get_loops(Y)
j0, j1 = sch.split(j, factors=[None, 8])
k0, k1 = sch.split(k, factors=[None, 4])
sch.reorder(j0, k0, k1, j1)
C = sch.get_block("C", "bmm_relu")
sch.reverse_compute_at(C, j0)
sch.parallel(b)
sch.unroll(k1)
c_loops = sch.get_loops(C)
sch.vectorize(c_loops[-1])
Y_init = sch.decompose_reduction(Y, k0)
sch.vectorize(sch.get_loops(Y_init)[-1])"""


def _listing(name: str) -> str:
    return (LISTINGS / f"{name}.py").read_text()


@pytest.fixture
def mm_relu(shell):
    shell.run_cell_magic("tir", "--quiet", _listing("ch2_mm_relu"))
    return shell.user_ns["MyModule"]


def test_mm_relu_steps_give_one_viewable_step_per_primitive_with_changed_lines(shell, mm_relu):
    shell.run_cell_magic("mlc_schedule", "MyModule", MM_RELU_STEPS)
    sch = shell.user_ns["MyModule_sch"]
    assert shell.user_ns["sch"] is sch
    assert "block_Y_init" in shell.user_ns  # names the cell assigned are bound too
    run = run_schedule_cell(MM_RELU_STEPS, mm_relu)
    assert [s.line for s in run.steps] == [2, 3, 4, 5, 6, 7, 8]  # %%mlc_schedule is line 1
    transforming = [s for s in run.steps if s.changed]
    assert [s.line for s in transforming] == [4, 5, 7, 8]
    assert "Y_init" in run.steps[-1].script and "Y_update" in run.steps[-1].script
    assert "split" in run.steps[2].trace[0]
    assert tvm_compat.structural_equal(run.steps[-1].mod, sch.mod)
    assert last_export()  # the stepper shown by the cell remembers its export


def test_the_trace_calls_loops_and_blocks_what_the_cell_called_them(mm_relu):
    run = run_schedule_cell(MM_RELU_STEPS, mm_relu)
    traces = [line for step in run.steps for line in step.trace]
    assert traces[1] == "i, j, k = sch.get_loops(block=block_Y)"
    assert traces[2].startswith("j0, j1 = sch.split(loop=j, factors=[None, 4]")
    assert traces[3] == "sch.reorder(j0, k, j1)"  # not MetaSchedule's l4, l3, l5
    assert traces[-1] == "block_Y_init = sch.decompose_reduction(block=block_Y, loop=k)"
    assert 'name="Y"' in traces[0]  # strings are left alone


def test_bmm_relu_exercise_reaches_the_books_target_module(shell):
    shell.run_cell_magic("tir", "--quiet", BMM_RELU)
    shell.run_cell_magic("tir", "--quiet", _listing("ch2_bmm_relu_target"))
    shell.run_cell_magic("mlc_schedule", "MyBmmRelu --as done", BMM_STEPS)
    done, target = shell.user_ns["done"], shell.user_ns["TargetModule"]
    tvm_compat.assert_structural_equal(done.mod, target)


def test_exported_steps_replay_on_a_fresh_schedule_to_an_equal_module(mm_relu):
    run = run_schedule_cell(MM_RELU_STEPS, mm_relu)
    exported = export_steps(run)
    assert "sch.reorder(j0, k, j1)" in exported.splitlines()  # the cell's names
    replayed = run_schedule_cell(exported, mm_relu)
    assert replayed.ok
    tvm_compat.assert_structural_equal(replayed.sch.mod, run.sch.mod)


def test_rerunning_a_cell_starts_from_a_fresh_schedule(shell, mm_relu):
    for _ in range(2):
        shell.run_cell_magic("mlc_schedule", "MyModule", MM_RELU_STEPS)
    assert len(shell.user_ns["sch"].trace.insts) == 7


def test_parallel_on_a_reduction_loop_is_reported_at_its_line_keeping_earlier_steps(mm_relu):
    code = MM_RELU_STEPS.split("\nsch.reorder")[0] + "\nsch.parallel(k)"
    run = run_schedule_cell(code, mm_relu)
    assert len(run.steps) == 3
    err = run.error
    assert isinstance(err, ScheduleStepError)
    assert err.line == 5
    assert str(err).startswith('line 5, column 1: parallel: The "parallel" cannot be fulfilled')
    assert "not a data parallel block iter" in str(err)
    assert '`with T.sblock("Y")`' in str(err)  # the block, not an opaque s_tir.SBlock#0
    assert "@I.ir_module" not in str(err)  # no whole-IR dump


def test_a_split_that_does_not_cover_the_extent_fails_at_its_line_and_binds_nothing(shell, mm_relu):
    code = 'b = sch.get_block("Y", "mm_relu")\ni, j, k = sch.get_loops(b)\nsch.split(j, [8, 8])'
    with pytest.raises(ScheduleStepError) as info:
        shell.run_cell_magic("mlc_schedule", "MyModule", code)
    assert str(info.value) == (
        "line 4, column 1: split: The product of factors is not larger than or equal to the "
        "extent of loop `for j in range(128)`"
    )
    assert info.value.source_line == "sch.split(j, [8, 8])"
    assert (
        "sch" not in shell.user_ns
        and "MyModule_sch" not in shell.user_ns
        and "b" not in shell.user_ns
    )


def test_an_unknown_module_name_is_a_one_line_usage_error(shell):
    from IPython.core.error import UsageError

    with pytest.raises(UsageError, match="cannot find the module 'Nope'"):
        shell.run_cell_magic("mlc_schedule", "Nope", "pass")


def test_first_k_steps_can_be_replayed_for_a_diff(mm_relu):
    run = run_schedule_cell(MM_RELU_STEPS, mm_relu, max_steps=3)
    assert len(run.steps) == 3 and "j_0" in run.steps[-1].script
