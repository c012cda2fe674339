"""Contract of tvm_compat/namespaces.py: where TVM 0.27 keeps TIR, schedules and TVMScript's
names, and what structural hashing and IR JSON promise. A failure here names what TVM changed."""

from __future__ import annotations

import importlib

from mlc_jupyter import tvm_compat


def test_the_namespaces_and_names_we_hand_out_are_where_0_27_keeps_them():
    tvm = tvm_compat.tvm()
    assert tvm_compat.version().startswith("0.27"), (
        f"TVM is {tvm_compat.version()}; mlc_jupyter/tvm_compat/ is written for 0.27: run "
        "tests/tvm_compat and update the files whose contract fails"
    )
    assert hasattr(tvm_compat.tir(), "PrimFunc"), "tvm.tirx no longer has PrimFunc (tir())"
    assert hasattr(tvm_compat.s_tir(), "Schedule"), "tvm.s_tir no longer has Schedule (s_tir())"
    names = tvm_compat.script_namespaces()
    assert tvm_compat.TIR_SCRIPT_NAMESPACE in names["T"].__name__.split("."), (
        f"TVMScript's T is {names['T'].__name__}: a misspelt T.name is no longer recognised by "
        f"its module name {tvm_compat.TIR_SCRIPT_NAMESPACE!r} (TIR_SCRIPT_NAMESPACE)"
    )
    for module, cls in tvm_compat.IR_DISPLAY_TYPES:
        assert hasattr(importlib.import_module(module), cls), (
            f"{module}.{cls} moved: the IR display (IR_DISPLAY_TYPES) would not highlight it"
        )
    for course_name in ("Block", "BlockRealize", "For", "IntImm"):
        assert tvm_compat.course_tir_attr(course_name) is not None


def test_equal_functions_hash_alike_and_ir_json_round_trips():
    te = tvm_compat.tvm().te

    def double():
        a = te.placeholder((8,), name="A")
        return te.create_prim_func([a, te.compute((8,), lambda i: a[i] * 2.0, name="B")])

    funcs = [double(), double()]
    assert tvm_compat.structural_equal(*funcs), "two identical PrimFuncs are no longer equal"
    assert tvm_compat.structural_hash(funcs[0]) == tvm_compat.structural_hash(funcs[1]), (
        "structural_hash differs for equal PrimFuncs: every build and tuning cache key breaks"
    )
    back = tvm_compat.load_json(tvm_compat.save_json(funcs[0]))
    assert tvm_compat.structural_equal(back, funcs[0]), "IR JSON no longer round-trips"
    assert isinstance(funcs[0], tvm_compat.prim_func_type()) and tvm_compat.is_tvm_object(funcs[0])


def test_structural_map_rebuilds_what_it_replaces_and_keeps_what_it_does_not():
    tir = tvm_compat.tir()
    x, y = tir.Var("x", "int32"), tir.Var("y", "int32")
    expr = x * 2 + 1
    var = tvm_compat.tir_nodes().Var
    swapped = tvm_compat.structural_map(expr, var, lambda v: y if v.same_as(x) else v)
    assert tvm_compat.structural_equal(swapped, y * 2 + 1), (
        f"structural_map no longer replaces the matched nodes (x -> y gave {swapped})"
    )
    kept = tvm_compat.structural_map(expr, var, lambda v: v)
    assert kept.same_as(expr), "structural_map copies an expression it did not change"
