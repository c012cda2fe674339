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


def test_a_failed_check_under_a_validation_header_gives_the_check_reason():
    text = (
        'Operator-specific validation (FValidate) for ir.Op(name="relax.call_tir", ...) '
        "identified error: \nCheck failed: (IsBaseOf(inferred, explicit)) is false: The `out_ty` "
        "argument for R.call_tir must be compatible with the PrimFunc."
    )
    assert error_reason(text) == (
        "The `out_ty` argument for R.call_tir must be compatible with the PrimFunc."
    )


def test_a_relax_operator_the_vm_cannot_emit_is_named_with_the_reason():
    """The book's §7.3 rewrite to R.ewise_fma, built without a lowering for it."""
    import tvm

    from mlc_jupyter.compilation import build_module
    from mlc_jupyter.errors import BuildError

    x = tvm.relax.Var("x", tvm.relax.TensorType((3, 4), "float32"))
    y = tvm.relax.Var("y", tvm.relax.TensorType((3, 4), "float32"))
    fma = tvm.relax.Call(tvm.ir.Op.get("relax.ewise_fma"), [x, y, y])
    bb = tvm.relax.BlockBuilder()
    with bb.function("main", [x, y]):
        bb.emit_func_output(bb.emit(fma))
    with pytest.raises(BuildError) as info:
        build_module(bb.get())
    message = str(info.value)
    assert "cannot emit this Relax operator directly" in message  # TVM's reason
    assert "R.ewise_fma(x, y, y)" in message  # and the operator it is about


def test_a_failed_comparison_keeps_the_values_it_saw():
    text = (
        "Check failed: input_shape[i] == heap_data[reg] (5 vs. 3) : ErrorContext(fn=main, "
        "param=y)  match_cast error,  shape[0] mismatch to a previous populated value."
    )
    assert error_reason(text) == (
        "ErrorContext(fn=main, param=y)  match_cast error,  shape[0] mismatch to a previous "
        "populated value. (5 vs. 3)"
    )


def test_an_operator_printed_whole_becomes_its_name():
    text = (
        'In ir.Op(span=None, ty=ir.Type(span=None), name="relax.multiply", description="", '
        'arguments=(ir.ArgumentInfo(name="x1", type_info="Tensor", description="The first."), '
        'ir.ArgumentInfo(name="x2", type_info="Tensor", description="The second.")), '
        "num_inputs=2), the first input shape at dim 1 is T.int64(4) and the second input shape "
        "at dim 1 is T.int64(0), which are not broadcastable."
    )
    assert error_reason(text) == (
        "In relax.multiply, the first input shape at dim 1 is T.int64(4) and the second input "
        "shape at dim 1 is T.int64(0), which are not broadcastable."
    )


def test_a_failed_check_without_a_message_keeps_its_condition_and_values():
    text = "Check failed: kinds.size() == bindings.size() (2 vs. 3) :"
    assert error_reason(text) == "kinds.size() == bindings.size() (2 vs. 3)"


def test_a_reason_that_ends_with_a_colon_keeps_the_lines_it_announces():
    text = (
        "Invalid Y.shape[0] on argument #1 when calling:\n"
        "  `relu0(X: Tensor([1, n], float32), Y: Tensor([1, n], float32))`,\n  expected 1"
    )
    assert error_reason(text) == (
        "Invalid Y.shape[0] on argument #1 when calling: "
        "`relu0(X: Tensor([1, n], float32), Y: Tensor([1, n], float32))`, expected 1"
    )
