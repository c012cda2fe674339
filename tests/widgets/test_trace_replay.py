"""``%mlc_trace`` and the trace replay widget through a real IPython shell (no browser)."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError
from trace_support import BOOK_MODULE

SCHEDULE_CELL = """
import tvm

def stochastic_schedule_mm(sch: tvm.tir.Schedule):
    block_C = sch.get_block("C", "main")
    i, j, k = sch.get_loops(block=block_C)
    j_factors = sch.sample_perfect_tile(loop=j, n=2)
    j_0, j_1 = sch.split(loop=j, factors=j_factors)
    sch.reorder(i, j_0, k, j_1)
    sch.decompose_reduction(block_C, k)
    return sch

sch = tvm.s_tir.Schedule(MyModule, seed=7)
sch = stochastic_schedule_mm(sch)
"""


@pytest.fixture
def book_shell(shell):
    from mlc_jupyter.dialect import translate

    shell.run_cell_magic("tir", "--quiet", BOOK_MODULE)
    result = shell.run_cell(translate(SCHEDULE_CELL).source)
    result.raise_error()
    return shell


def _send(widget, **content):
    """What the front end does: a custom message to the widget's model."""
    widget._handle_custom_msg(content, [])


def test_mlc_trace_shows_every_instruction_and_ends_at_the_final_module(book_shell):
    from mlc_jupyter.tvm_compat import structural_equal
    from mlc_jupyter.widgets.trace_replay import TraceReplay

    w = book_shell.run_line_magic("mlc_trace", "sch --mod MyModule")
    assert isinstance(w, TraceReplay)
    assert w.n_steps == w.step == 6 and len(w.steps) == 6
    # course mode is on: the book's spelling (get_block), TVM 0.27's one choice away
    assert w.spelling == "course" and w.offer_course_spelling
    assert w.steps[0]["text"] == 'block_C = sch.get_block(name="C", func_name="main")'
    assert "T.block(" in w.ir_html and "T.sblock(" not in w.ir_html
    w.spelling = "tvm"
    assert "T.sblock(" in w.ir_html
    assert [s["text"] for s in w.steps] == [  # the book function's own names, not l1, l4, ...
        'block_C = sch.get_sblock(name="C", func_name="main")',
        "i, j, k = sch.get_loops(block=block_C)",
        "v4, v5 = sch.sample_perfect_tile(loop=j, n=2, max_innermost_factor=16, decision=[16, 8])",
        "j_0, j_1 = sch.split(loop=j, factors=[v4, v5], preserve_unit_iters=True, "
        "disable_predication=False)",
        "sch.reorder(i, j_0, k, j_1)",
        "b8 = sch.decompose_reduction(block=block_C, loop=k)",
    ]
    assert w.groups == [{"label": "block C", "first": 0, "last": 5}]
    assert structural_equal(w.session.final_module, book_shell.user_ns["sch"].mod)
    assert "C_update" in w.ir_html


def test_a_schedule_without_mod_is_matched_to_a_notebook_module(book_shell):
    w = book_shell.run_line_magic("mlc_trace", "sch")
    assert w.session.mod.same_as(book_shell.user_ns["MyModule"])


def test_stepping_marks_the_lines_the_step_changed_and_shows_a_diff(book_shell):
    w = book_shell.run_line_magic("mlc_trace", "sch --mod MyModule")
    w.step = 4  # the split
    assert w.changed and "j_0" in w.diff_text and w.diff_text.count("\n+") >= 1
    from mlc_jupyter.display.highlight import MARK_BACKGROUND

    marked = w.ir_html.count(MARK_BACKGROUND)
    assert marked == len(w.changed)
    w.step = 2  # get_loops changes nothing
    assert w.changed == [] and w.diff_text == ""
    w.step = 99
    assert w.step == 6


def test_editing_a_decision_from_the_front_end_replays_and_retimes(book_shell):
    w = book_shell.run_line_magic("mlc_trace", "sch --mod MyModule --as best_mm")
    _send(w, type="edit", index=2, value="8, 16")
    assert w.error == "" and w.steps[2]["decision"]["value"] == [8, 16]
    assert "T.grid(128, 8)" in w.session.final_module.script()
    _send(w, type="retime")
    assert len(w.history) == 1 and w.history[0]["correct"] is True
    assert w.history[0]["latency_ms"] > 0 and w.history[0]["decisions"] == "#3: [8, 16]"
    # the row's share of this machine's fp32 peak, and the row on its roofline
    assert w.history[0]["peak_pct"] > 0 and 'aria-label="roofline chart"' in w.roofline_html
    _send(w, type="pick", row=0)
    bound = book_shell.user_ns["best_mm"]
    assert bound.decisions == {2: [8, 16]} and bound.latency_s == w.session.history[0].latency_s
    assert w.status == "row 1 bound to best_mm"


def test_an_invalid_decision_shows_the_reason_and_keeps_the_previous_state(book_shell):
    w = book_shell.run_line_magic("mlc_trace", "sch --mod MyModule")
    before = list(w.steps)
    _send(w, type="edit", index=2, value="[8, 8]")
    assert w.error == (
        "instruction 3: the product of [8, 8] is 64, but the loop extent is 128 "
        "(choose factors that multiply to 128)"
    )
    assert w.steps == before
    _send(w, type="edit", index=2, value="[2, 2, 32]")
    assert "the tile needs 2 factors, got 3" in w.error


def test_export_gives_a_schedule_cell_and_json(book_shell):
    w = book_shell.run_line_magic("mlc_trace", "sch --mod MyModule --as mm_x")
    _send(w, type="export", format="code")
    assert w.export_text.startswith("%%mlc_schedule MyModule --as mm_x\nblock_C = sch.get_sblock(")
    _send(w, type="export", format="json")
    assert w.export_text.startswith('[[["GetSBlock"')


def test_a_saved_notebook_gets_a_static_fallback_with_the_list_and_module(book_shell):
    w = book_shell.run_line_magic("mlc_trace", "sch --mod MyModule")
    data, _ = w._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in data
    html = data["text/html"]
    assert "Trace replay" in html and "sample_perfect_tile" in html and "C_update" in html
    assert "# block C" in data["text/plain"]


@pytest.mark.slow
def test_mlc_trace_of_a_tune_result_groups_postprocessing(shell, tuned_matmul):
    shell.user_ns["res"] = tuned_matmul
    w = shell.run_line_magic("mlc_trace", "res")
    assert w.groups[-1]["label"] == "postprocessing"
    assert w.mod_name == "res.workload"


def test_mlc_trace_errors_are_short(shell):
    with pytest.raises(UsageError, match="cannot find the trace 'nope'"):
        shell.run_line_magic("mlc_trace", "nope")
    shell.user_ns["x"] = 3
    from mlc_jupyter.errors import TraceError

    with pytest.raises(TraceError, match="cannot read a trace from a int"):
        shell.run_line_magic("mlc_trace", "x")


def test_mlc_trace_static_prints_the_grouped_list_and_final_module(book_shell):
    from IPython.utils.capture import capture_output

    with capture_output() as captured:
        assert book_shell.run_line_magic("mlc_trace", "sch --mod MyModule --static") is None
    bundle = captured.outputs[-1].data
    assert "step 6 of 6" in bundle["text/html"] and "C_update" in bundle["text/html"]
    assert bundle["text/plain"].startswith("trace of schedule: 6 instructions\n# block C")


def test_picking_before_any_retime_says_to_retime_first(book_shell):
    w = book_shell.run_line_magic("mlc_trace", "sch --mod MyModule")
    assert w.pick() is None
    assert w.error == "no timed row to pick: press Re-time first"
    assert "sch_replayed" not in book_shell.user_ns


def test_the_exported_cell_runs_as_mlc_schedule_and_reproduces_the_module(book_shell):
    from mlc_jupyter.tvm_compat import structural_equal

    w = book_shell.run_line_magic("mlc_trace", "sch --mod MyModule --as mm_8x16")
    w.edit(2, [8, 16])
    book_shell.run_cell(w.export("code")).raise_error()
    assert structural_equal(book_shell.user_ns["mm_8x16"].mod, w.session.final_module)


def test_any_error_raised_by_a_front_end_message_is_shown_in_the_widget(book_shell):
    widget = book_shell.run_line_magic("mlc_trace", "sch --mod MyModule")
    _send(widget, type="pick", row="first")
    assert widget.error.startswith("ValueError: invalid literal for int()")


MLC_SCHEDULE_CELL = """block_C = sch.get_block("C", "main")
i, j, k = sch.get_loops(block_C)
j0, j1 = sch.split(j, factors=[None, 8])
sch.reorder(j0, k, j1)"""


def test_a_schedule_cells_trace_shows_the_cells_loop_names_in_the_stepper_and_the_replay(shell):
    """What the learner wrote (j0, k, j1), not MetaSchedule's l4, l3, l5, in the stepper's trace,
    the replay widget, its static view and its exported cell; the cell re-runs from the export."""
    from IPython.utils.capture import capture_output

    from mlc_jupyter.tvm_compat import structural_equal

    shell.run_cell_magic("tir", "--quiet", BOOK_MODULE)
    with capture_output() as shown:
        shell.run_cell_magic("mlc_schedule", "MyModule", MLC_SCHEDULE_CELL)
    stepper = shown.outputs[-1].data
    assert "sch.reorder(j0, k, j1)" in stepper["text/plain"] + stepper.get("text/html", "")
    w = shell.run_line_magic("mlc_trace", "sch")
    assert w.steps[-1]["text"] == "sch.reorder(j0, k, j1)"
    assert w.steps[1]["text"] == "i, j, k = sch.get_loops(block=block_C)"
    with capture_output() as captured:
        shell.run_line_magic("mlc_trace", "sch --static")
    static = captured.outputs[-1].data
    assert "sch.reorder(j0, k, j1)" in static["text/plain"]
    assert "sch.reorder(j0, k, j1)" in static["text/html"]
    assert "l4" not in static["text/plain"]
    exported = w.export("code")
    assert "sch.reorder(j0, k, j1)" in exported
    shell.run_cell(exported).raise_error()
    assert structural_equal(shell.user_ns["sch"].mod, w.session.final_module)
