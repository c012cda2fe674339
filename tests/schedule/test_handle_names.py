"""Handles named as the schedule cell named them, in every copy of its trace (real TVM)."""

from __future__ import annotations

from build_support import MM_RELU_STEPS, mm_relu

from mlc_jupyter.schedule import run_schedule_cell
from mlc_jupyter.schedule.handle_names import cell_names, named_as_in_the_cell
from mlc_jupyter.tvm_compat import Schedule


def _named(trace) -> list[str]:
    return named_as_in_the_cell(list(trace.as_python()), cell_names(trace))


def test_a_schedule_cells_trace_reads_with_the_cells_own_names():
    run = run_schedule_cell(MM_RELU_STEPS, mm_relu())
    lines = _named(run.sch.trace)
    assert "sch.reorder(j0, k, j1)" in lines  # not MetaSchedule's l4, l3, l5
    assert 'block_Y = sch.get_sblock(name="Y", func_name="mm_relu")' in lines
    assert "block_Y_init = sch.decompose_reduction(block=block_Y, loop=k)" in lines


def test_a_replay_on_a_fresh_schedule_keeps_metaschedules_names():
    """A tuning record's trace holds handles no cell named."""
    run = run_schedule_cell(MM_RELU_STEPS, mm_relu())
    sch = Schedule(mm_relu())
    run.sch.trace.apply_to_schedule(sch, remove_postproc=False)
    assert cell_names(sch.trace) == {}
    assert "sch.reorder(l4, l3, l5)" in _named(sch.trace)


def test_a_name_the_cell_rebound_or_that_is_another_handles_trace_name_is_not_used():
    code = """b = sch.get_block("Y", func_name="mm_relu")
i, j, k = sch.get_loops(b)
i, l1 = sch.split(j, factors=[None, 4])
sch.reorder(i, k, l1)"""
    run = run_schedule_cell(code, mm_relu())
    lines = _named(run.sch.trace)
    # `i` names two loops and `l1` is the trace's name of the first loop: both stay MetaSchedule's
    assert lines[-1] == "sch.reorder(l4, k, l5)"
    assert lines[1] == "l1, j, k = sch.get_loops(block=b)"
    assert run.steps[-1].trace == ("sch.reorder(i, k, l1)",)  # the step reads in cell order
