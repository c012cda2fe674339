"""The stepper widget's state (no browser), interactive mode and the static HTML fallback."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlc_jupyter import tvm_compat
from mlc_jupyter.schedule import ScheduleSession, last_export, run_schedule_cell

LISTING = Path(__file__).parents[1] / "course" / "listings" / "ch2_mm_relu.py"
STEPS = """block_Y = sch.get_block("Y", func_name="mm_relu")
i, j, k = sch.get_loops(block_Y)
j0, j1 = sch.split(j, factors=[None, 4])
sch.reorder(j0, k, j1)"""


@pytest.fixture
def mm_relu(shell):
    shell.run_cell_magic("tir", "--quiet", LISTING.read_text())
    return shell.user_ns["MyModule"]


def test_the_cell_shows_a_stepper_whose_steps_carry_ir_diff_trace_and_loop_tree(mm_relu):
    from mlc_jupyter.widgets.schedule_stepper import ScheduleStepper

    widget = ScheduleStepper(ScheduleSession(mm_relu, STEPS, first_line=2))
    assert len(widget.steps) == 5 and widget.index == 4  # initial module + 4 steps, at the end
    widget.index = 3  # the IR and diffs of the step on screen
    split = {**widget.steps[3], **widget.current}
    assert split["line"] == 4 and split["source"].startswith("j0, j1 = sch.split")
    assert split["changed"] and f'data-line="{split["changed"][0]}"' in split["html"]
    assert "+            for j_0, k, j_1 in T.grid(32, 128, 4):" not in split["unified"]
    assert any(tag == "replace" for _l, _r, tag in split["side"])
    assert widget.steps[4]["tree"].splitlines()[0] == "i 128 · j_0 32 · k 128 · j_1 4"
    assert "sch.reorder" in widget.steps[4]["trace"]


def test_in_course_mode_the_ir_and_trace_show_the_course_spelling_one_choice_from_0_27s(
    shell, mm_relu
):
    import html
    import re

    from mlc_jupyter.magics.course_state import course_spelling_options
    from mlc_jupyter.widgets.schedule_stepper import ScheduleStepper

    options = course_spelling_options(shell)  # what %%mlc_schedule passes: course mode is on
    assert options == {"spelling": "course", "offer_course_spelling": True}
    widget = ScheduleStepper(ScheduleSession(mm_relu, STEPS, first_line=2), **options)

    def ir() -> str:
        return html.unescape(re.sub(r"<[^>]+>", "", widget.current["html"]))

    assert 'with T.block("Y"):' in ir() and "sblock" not in ir()
    assert widget.steps[1]["trace"] == 'block_Y = sch.get_block(name="Y", func_name="mm_relu")'
    widget.spelling = "tvm"  # the menu's other choice
    assert 'with T.sblock("Y"):' in ir() and ".get_sblock(" in widget.steps[1]["trace"]


def test_the_saved_notebook_gets_html_with_the_steps_and_the_final_ir(mm_relu):
    from mlc_jupyter.widgets.schedule_stepper import ScheduleStepper

    widget = ScheduleStepper(ScheduleSession(mm_relu, STEPS, first_line=2))
    data, _meta = widget._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in data
    assert "line 4" in data["text/plain"] and "ScheduleStepper object" not in data["text/plain"]
    assert "line 4" in data["text/html"] and "j_1" in data["text/html"]


def test_interactive_mode_applies_menu_choices_undoes_redoes_and_exports(mm_relu):
    from mlc_jupyter.widgets.schedule_stepper import ScheduleStepper

    widget = ScheduleStepper(ScheduleSession(mm_relu), interactive=True)
    assert widget.blocks == {"Y": ["i (128)", "j (128)", "k (128)"], "C": ["i (128)", "j (128)"]}
    assert {"split", "reorder", "reverse_compute_at", "decompose_reduction"} <= set(
        widget.primitives
    )
    assert widget.apply("split", "Y", {"loop": 1, "factors": "[None, 4]"})
    assert widget.blocks["Y"] == ["i (128)", "j_0 (32)", "j_1 (4)", "k (128)"]
    assert widget.apply("reorder", "Y", {"loops": [1, 3, 2]})
    assert widget.apply("reverse_compute_at", "C", {"target_block": "Y", "target_loop": 1})
    assert len(widget.steps) == 4
    widget.undo()
    assert len(widget.steps) == 3 and widget.can_redo
    widget.redo()
    code = widget.export()
    assert last_export() == code and code.count("\n") == 2
    replay = run_schedule_cell(code, mm_relu)
    tvm_compat.assert_structural_equal(replay.sch.mod, widget.run.sch.mod)


def test_a_failing_menu_choice_shows_its_reason_and_keeps_the_schedule(mm_relu):
    from mlc_jupyter.widgets.schedule_stepper import ScheduleStepper

    widget = ScheduleStepper(ScheduleSession(mm_relu), interactive=True)
    assert not widget.apply("parallel", "Y", {"loop": 2})
    assert 'parallel: The "parallel" cannot be fulfilled' in widget.error
    assert len(widget.steps) == 1 and widget.session.code == ""


def test_timing_a_step_records_its_latency(mm_relu):
    from mlc_jupyter.widgets.schedule_stepper import ScheduleStepper

    widget = ScheduleStepper(ScheduleSession(mm_relu, STEPS, first_line=2))
    timing = widget.time_step(4)
    assert timing.median_s and timing.median_s > 0
    assert widget.timings[0]["index"] == 4 and widget.timings[0]["ms"] > 0
    assert widget.status.startswith("step 4: ")


def test_the_line_magic_returns_an_interactive_stepper(shell, mm_relu):
    widget = shell.run_line_magic("mlc_schedule", "MyModule")
    assert widget.interactive and "Y" in widget.blocks


def test_python_users_open_a_stepper_on_a_module_without_the_magic(mm_relu):
    import mlc_jupyter

    widget = mlc_jupyter.ScheduleStepper.of(mm_relu, STEPS, func="mm_relu")
    assert widget.interactive and len(widget.steps) == 5
    assert widget.apply_code("sch.parallel(i)")  # keeps growing from the given steps
    assert len(widget.steps) == 6 and "T.parallel" in widget.current["unified"]


def test_any_error_raised_by_a_front_end_message_is_shown_in_the_widget(mm_relu):
    from mlc_jupyter.widgets.schedule_stepper import ScheduleStepper

    widget = ScheduleStepper(ScheduleSession(mm_relu, STEPS, first_line=2))
    widget._handle_custom_msg({"type": "time", "index": 99}, [])  # the path a click takes
    assert widget.error.startswith("IndexError: ")  # not only in the kernel's log
    widget._handle_custom_msg({"type": "time", "index": 1}, [])
    assert widget.timings[-1]["index"] == 1  # the widget still works
