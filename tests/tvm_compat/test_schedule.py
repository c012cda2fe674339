"""Contract of tvm_compat/schedule.py: block and loop handles, the instruction a trace records
for a block lookup, trace replay from JSON, and how schedule errors name IR objects. A failure
names what TVM changed."""

from __future__ import annotations

import re

from mlc_jupyter import tvm_compat


def _add_one():
    te = tvm_compat.tvm().te
    a = te.placeholder((64,), name="A")
    return te.create_prim_func([a, te.compute((64,), lambda i: a[i] + 1.0, name="B")])


def test_handles_traces_and_their_replay_are_as_0_27_records_them():
    sch = tvm_compat.Schedule(_add_one())
    assert isinstance(sch, tvm_compat.schedule_type()) and tvm_compat.is_schedule(sch)
    block = tvm_compat.get_block(sch, "B")
    assert isinstance(block, tvm_compat.block_rv_type()), f"get_block gave a {type(block)}"
    (loop,) = sch.get_loops(block)
    assert isinstance(loop, tvm_compat.loop_rv_type()), f"get_loops gave a {type(loop)}"
    sch.split(loop, factors=[None, 8])
    kinds = [inst.kind.name for inst in sch.trace.insts]
    assert kinds[0] == tvm_compat.GET_BLOCK_INSTRUCTION, (
        f"a block lookup is recorded as {kinds[0]!r}, not {tvm_compat.GET_BLOCK_INSTRUCTION!r} "
        "(the trace widget and replay look for it)"
    )
    replay = tvm_compat.Schedule(_add_one())
    tvm_compat.apply_json_trace(sch.trace.as_json(), replay)
    assert tvm_compat.structural_equal(replay.mod, sch.mod), "a JSON trace no longer replays"
    rebuilt = tvm_compat.make_trace(sch.trace.insts, dict(sch.trace.decisions))
    assert isinstance(rebuilt, tvm_compat.trace_type())


def test_a_schedule_error_names_the_ir_object_the_way_the_error_display_finds_it():
    sch = tvm_compat.Schedule(_add_one())
    try:
        sch.compute_inline(tvm_compat.get_block(sch, "B"))  # an output block cannot be inlined
    except Exception as err:  # noqa: BLE001 - any error; its message is the contract
        message = str(err)
    else:
        raise AssertionError("inlining an output block no longer fails")
    assert re.search(tvm_compat.SCHEDULE_ERROR_OBJECT_REF, message), (
        "schedule errors name IR objects differently now (SCHEDULE_ERROR_OBJECT_REF):\n"
        + message[:600]
    )
    assert hasattr(tvm_compat.dlight(), "gpu"), "dlight moved (dlight())"


def test_trace_handle_names_are_the_ones_as_python_prints():
    sch = tvm_compat.Schedule(_add_one())
    (loop,) = sch.get_loops(tvm_compat.get_block(sch, "B"))
    sch.split(loop, factors=[None, 8])
    names = [name for _, name in tvm_compat.trace_rv_names(sch.trace)]
    assert names == ["b0", "l1", "l2", "l3"]
    printed = "\n".join(str(line) for line in sch.trace.as_python())
    assert "l2, l3 = sch.split(loop=l1" in printed, (
        f"Trace.as_python names handles differently now:\n{printed}"
    )


def test_a_traces_steps_read_the_same_from_the_object_and_its_json_and_the_call_ops_exist():
    sch = tvm_compat.Schedule(_add_one())
    (loop,) = sch.get_loops(tvm_compat.get_block(sch, "B"))
    sch.annotate(loop, "pragma_unroll_explicit", 1)
    steps = tvm_compat.trace_steps(sch.trace)
    assert steps[-1][0] == tvm_compat.ANNOTATE_INSTRUCTION, f"an annotation is {steps[-1][0]!r}"
    assert str(steps[-1][2][0]) == "pragma_unroll_explicit", "Annotate's key is no longer attr 0"
    from_json = tvm_compat.trace_steps(sch.trace.as_json())
    assert [(k, str(a[0])) for k, _, a in from_json if a] == [
        (k, str(a[0])) for k, _, a in steps if a
    ], "Trace.as_json() lays out instructions differently"
    for name in tvm_compat.FOREIGN_CALL_OPS:
        assert tvm_compat.tvm().ir.Op.get(name), f"TVM has no op {name!r} (renamed?)"
