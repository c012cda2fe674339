"""The one-line reason of an error, as every layer shows it (real TVM errors where they matter)."""

from __future__ import annotations

import pytest

from mlc_jupyter.errors import error_reason


def test_a_schedule_error_gives_its_error_message_not_the_ir_dump():
    from build_support import matmul

    from mlc_jupyter.tvm_compat import Schedule

    with pytest.raises(Exception) as info:  # noqa: PT011 - TVM's own ScheduleError
        Schedule(matmul(8)).get_sblock("nope")
    assert "@I.ir_module" in str(info.value)  # the dump the user must not see
    assert error_reason(info.value) == "Cannot find a block with the name: nope"


def test_a_text_holding_a_traceback_gives_its_exception_line():
    text = (
        "RPCRunner: An exception occurred\nTraceback (most recent call last):\n"
        '  File "x.py", line 3, in run\n    f()\ntvm.error.InternalError: device lost\n'
    )
    assert error_reason(text) == "tvm.error.InternalError: device lost"


def test_a_failed_check_keeps_only_its_reason():
    text = "Check failed: (n > 0) is false : extent must be positive\n  more context"
    assert error_reason(text) == "extent must be positive"


def test_other_messages_give_their_first_line_cut_to_the_limit():
    assert error_reason(ValueError("bad target\nsecond line")) == "bad target"
    assert error_reason("x" * 500) == "x" * 300
    assert error_reason("x" * 500, limit=None) == "x" * 500


def test_an_empty_message_names_the_exception_type():
    assert error_reason(KeyError()) == "KeyError"
    assert error_reason("") == "unknown error"
