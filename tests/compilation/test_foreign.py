"""Code from elsewhere (a shared trace, a record, a module from a file) is checked before anything
from it is built: import pragmas and annotations outside the allowlist are refused by name and
step, extern calls in a module from a file too; MetaSchedule's own traces pass."""

from __future__ import annotations

import json

import pytest
from foreign_support import add_one, poisoned_schedule

from mlc_jupyter.compilation import winograd
from mlc_jupyter.compilation.conv_schedule import VectorUnit
from mlc_jupyter.compilation.foreign import check_module, check_trace
from mlc_jupyter.compilation.matmul_schedule import schedule_matmul
from mlc_jupyter.errors import ForeignCodeError
from mlc_jupyter.trace.load import to_json_value
from mlc_jupyter.tvm_compat import (
    PREFETCH_ANNOTATION,
    PREFETCH_LOCALITY_ANNOTATION,
    Schedule,
    apply_json_trace,
    get_block,
    structural_equal,
    tvm,
)


def test_a_trace_that_imports_llvm_is_refused_with_its_step_as_object_json_and_text(tmp_path):
    sch = poisoned_schedule(add_one(), tmp_path / "marker")
    for trace in (sch.trace, sch.trace.as_json(), json.dumps(sch.trace.as_json())):
        with pytest.raises(ForeignCodeError) as err:
            check_trace(trace, "shared.json")
        message = str(err.value)
        assert message.startswith("step 3 of shared.json: sch.annotate(")
        assert '"pragma_import_llvm"' in message and "nothing was built" in message
        assert "runs when it loads" in message
        assert len(message) < 300, "the IR it carries is cut short, not dumped"


def test_an_annotation_outside_the_allowlist_is_refused_and_the_hints_metaschedule_writes_pass():
    sch = Schedule(add_one())
    block = get_block(sch, "B")
    (loop,) = sch.get_loops(block)
    sch.annotate(loop, "pragma_auto_unroll_max_step", 16)
    sch.annotate(block, "meta_schedule.parallel", 4)
    sch.annotate(loop, "pragma_unroll_explicit", 1)
    check_trace(sch.trace, "a record")  # MetaSchedule's and dlight's hints
    sch.annotate(block, "my_own_key", "value")
    with pytest.raises(ForeignCodeError, match=r'^step 6 of a record: .*"my_own_key".* not one of'):
        check_trace(sch.trace, "a record")


def test_a_record_of_a_product_with_a_weight_passes_with_its_prefetch_annotation():
    # the BLIS space marks a product whose B is a weight for the prefetch pass; its records,
    # read back from a work dir, must replay
    te = tvm().te
    a, w = te.placeholder((8, 64), name="a"), te.placeholder((64, 32), name="w")
    k = te.reduce_axis((0, 64), name="k")
    out = te.compute((8, 32), lambda i, j: te.sum(a[i, k] * w[k, j], axis=k), name="C")
    func = te.create_prim_func([a, w, out]).with_attr("layout_free_buffers", [1])
    sch = Schedule(tvm().IRModule({"main": func}))
    schedule_matmul(sch, "no-pack", VectorUnit(lanes=16, registers=32))
    assert PREFETCH_ANNOTATION in str(sch.trace)
    for trace in (sch.trace, sch.trace.as_json()):
        check_trace(trace, "line 1 of database_tuning_record.json")


def test_a_record_of_a_small_layers_winograd_kernel_passes_with_the_caches_its_prefetch_names():
    # a 7x7 layer's Winograd products prefetch their weight into the second-level cache (an
    # annotation the tuning space samples); the records a tune writes must replay from its work
    # dir, and the same step with another key is still refused
    te = tvm().te
    data = te.placeholder((1, 7, 7, 512), name="data")
    weight = te.placeholder((4, 4, 512, 512), name="weight")
    out = winograd.winograd_compute(data, weight, (1, 1, 1, 1), winograd.Plan(2))
    mod = tvm().IRModule({"main": te.create_prim_func([data, weight, out])})
    sch = Schedule(mod)
    winograd.schedule_winograd(sch, 16, winograd.rule_decisions_for(mod["main"], 16, 32, 2))
    text = json.dumps(to_json_value(sch.trace.as_json()))
    assert f'"{PREFETCH_LOCALITY_ANNOTATION}"' in text
    check_trace(text, "line 1 of database_tuning_record.json")
    replayed = Schedule(mod)
    apply_json_trace(json.loads(text), replayed)
    assert structural_equal(replayed.mod, sch.mod)
    poisoned = text.replace(f'"{PREFETCH_LOCALITY_ANNOTATION}"', '"pragma_import_llvm"')
    with pytest.raises(ForeignCodeError, match="pragma_import_llvm"):
        check_trace(poisoned, "line 1 of database_tuning_record.json")


def test_a_module_from_a_file_that_links_or_calls_outside_code_is_refused(tmp_path):
    check_module(add_one(), "a record's workload")  # a plain kernel passes
    with pytest.raises(ForeignCodeError, match=r'^main in w\.json carries the annotation "pragma_'):
        check_module(poisoned_schedule(add_one(), tmp_path / "m").mod, "w.json")
    from mlc_jupyter import parse_tir

    calls = parse_tir(
        """
@T.prim_func
def calls(A: T.Buffer((4,), "float32")):
    for i in range(4):
        A[i] = T.call_extern("float32", "system", A[i])
"""
    )
    with pytest.raises(
        ForeignCodeError, match=r'calls "system" outside the kernel \(call_extern\)'
    ):
        check_module(calls, "w.json")
