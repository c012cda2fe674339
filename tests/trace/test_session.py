"""The trace service: load, replay step by step, edit decisions, re-time, export (real TVM)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from trace_support import make_book

from mlc_jupyter.errors import TraceError

book = pytest.fixture(scope="module")(make_book)


@pytest.fixture
def session(book):
    from mlc_jupyter.trace import load_trace

    mod, sch = book
    return load_trace(sch, mod)


def _matmul(built, a, b):
    import tvm

    c = tvm.runtime.tensor(np.zeros((128, 128), "float32"))
    built["main"](tvm.runtime.tensor(a), tvm.runtime.tensor(b), c)
    return c.numpy()


def test_replaying_all_instructions_gives_the_schedules_own_module(book, session):
    from mlc_jupyter.tvm_compat import structural_equal

    _, sch = book
    assert session.n_steps == len(sch.trace.insts) == 6
    assert structural_equal(session.final_module, sch.mod)


def test_instructions_read_as_trace_show_and_group_by_block(book, session):
    _, sch = book
    shown = str(sch.trace)
    for step in session.steps:
        assert step.text in shown
    assert [s.kind for s in session.steps][:3] == ["GetSBlock", "GetLoops", "SamplePerfectTile"]
    assert {s.block for s in session.steps} == {"C"}
    tile = session.steps[2].decision
    assert (tile.kind, tile.value, tile.n, tile.extent) == ("tile", [16, 8], 2, 128)


def test_the_module_after_k_steps_is_a_fresh_replay_of_the_first_k(book, session):
    from mlc_jupyter.tvm_compat import structural_equal

    mod, _ = book
    assert structural_equal(session.module_at(0), mod)
    assert "j_0" not in session.module_at(3).script()
    assert "j_0" in session.module_at(4).script()
    with pytest.raises(TraceError, match=r"step 9 is outside 0\.\.6"):
        session.module_at(9)


def test_changing_the_tile_to_8_16_matches_numpy_and_adds_a_latency_row(session):
    from mlc_jupyter.tvm_compat import compile as tvm_compile

    session.set_decision(2, [8, 16])
    assert session.decisions() == {2: [8, 16]}
    assert "T.grid(128, 8)" in session.final_module.script()
    rng = np.random.default_rng(0)
    a, b = rng.random((128, 128), dtype="float32"), rng.random((128, 128), dtype="float32")
    built = tvm_compile(session.final_module, "llvm")
    np.testing.assert_allclose(_matmul(built, a, b), a @ b, rtol=1e-4)
    row = session.retime()
    assert row.correct is True and row.latency_s > 0 and row.gflops > 0
    assert row.decisions == {2: [8, 16]} and len(session.history) == 1
    picked = session.result(0)
    assert picked.latency_s == row.latency_s and picked.decisions == {2: [8, 16]}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([8, 8], "the product of [8, 8] is 64, but the loop extent is 128"),
        ([8, 4, 4], "the tile needs 2 factors, got 3: [8, 4, 4]"),
        ([128, 0], "tile factors must be at least 1"),
        ([4, 32], "the innermost factor 32 exceeds max_innermost_factor=16"),
        ("eight", "cannot read 'eight' as a decision"),
    ],
)
def test_an_invalid_tile_is_refused_with_the_reason_and_nothing_changes(session, value, message):
    before = session.final_module
    with pytest.raises(TraceError) as info:
        session.set_decision(2, value)
    assert message in str(info.value)
    assert session.decisions() == {2: [16, 8]} and session.final_module.same_as(before)


def test_only_sampling_instructions_take_a_decision(session):
    with pytest.raises(TraceError, match=r"instruction 3 \(Split\) makes no sampling decision"):
        session.set_decision(3, [8, 16])
    with pytest.raises(TraceError, match="there is no instruction 40"):
        session.set_decision(40, [8, 16])


def test_exported_code_and_json_reproduce_the_edited_module(book, session):
    from mlc_jupyter.trace import load_trace
    from mlc_jupyter.tvm_compat import Schedule, structural_equal

    mod, _ = book
    session.set_decision(2, "8, 16")
    code = session.export_code("MyModule", "mm_8x16")
    head, *body = code.splitlines()
    assert head == "%%mlc_schedule MyModule --as mm_8x16"
    sch = Schedule(mod)
    exec("\n".join(body), {"sch": sch})  # noqa: S102 - the exported cell body, as the magic runs it
    assert structural_equal(sch.mod, session.final_module)
    again = load_trace(session.export_json(), mod=mod)
    assert structural_equal(again.final_module, session.final_module)
    assert json.loads(session.export_json())[1] == [[2, [8, 16]]]


def test_a_schedule_finds_its_module_among_candidates_or_asks_for_it(book):
    from mlc_jupyter.trace import load_trace
    from mlc_jupyter.tvm_compat import Schedule

    mod, sch = book
    other = Schedule(mod).mod  # an unrelated IRModule first: the trace replays there too
    assert load_trace(sch, candidates=[mod]).mod.same_as(mod)
    with pytest.raises(TraceError, match="cannot tell which module the schedule was recorded on"):
        load_trace(sch, candidates=[])
    assert other is not None


def test_bad_sources_are_refused_with_a_short_message(book):
    from mlc_jupyter.trace import load_trace

    mod, sch = book
    with pytest.raises(TraceError, match="a JSON trace needs the module it was recorded on"):
        load_trace("[[], []]")
    with pytest.raises(TraceError, match="the text is not a JSON trace"):
        load_trace("{not json", mod=mod)
    with pytest.raises(TraceError, match="cannot read a trace from a float"):
        load_trace(3.5, mod=mod)
    with pytest.raises(TraceError, match="a trace replays on an IRModule or a PrimFunc, not a int"):
        load_trace(sch, mod=7)


@pytest.mark.slow
def test_a_trace_with_postprocessing_from_a_tune_result_replays_and_edits(tuned_matmul):
    from mlc_jupyter.trace import load_trace
    from mlc_jupyter.tvm_compat import structural_equal

    session = load_trace(tuned_matmul)
    assert session.label == "tune result"
    assert structural_equal(session.final_module, tuned_matmul.mod)
    post = [s for s in session.steps if s.postproc]
    assert post and post[0].kind == "EnterPostproc" and all(s.postproc for s in post)
    categorical = next(s for s in session.steps if s.decision and s.decision.kind == "categorical")
    other = next(c for c, _ in categorical.decision.choices if c != categorical.decision.value)
    session.set_decision(categorical.index, other)
    assert session.decisions()[categorical.index] == other
    with pytest.raises(TraceError, match="is not one of the legal choices"):
        session.set_decision(categorical.index, 99)
    tile = next(s for s in session.steps if s.decision and s.decision.kind == "tile")
    with pytest.raises(TraceError, match="but the loop extent is"):
        session.set_decision(tile.index, [1] * (tile.decision.n - 1) + [3])
    row = session.retime()
    assert row.correct is True and row.latency_s > 0


@pytest.mark.slow
def test_top_records_of_a_work_dir_load_as_traces(tuned_matmul):
    from mlc_jupyter.trace import load_trace
    from mlc_jupyter.tune import top_records

    records = top_records(tuned_matmul.work_dir, 2)
    session = load_trace(records)
    assert session.label == "tuning record" and session.n_steps > 10
    assert load_trace(tuned_matmul.work_dir).n_steps == session.n_steps


def test_a_compute_location_offers_only_legal_loops_and_refuses_others():
    import tvm
    from tvm import te

    from mlc_jupyter.trace import load_trace
    from mlc_jupyter.tvm_compat import Schedule

    a = te.placeholder((64, 64), name="A")
    b = te.compute((64, 64), lambda i, j: a[i, j] * 2.0, name="B")
    c = te.compute((64, 64), lambda i, j: b[i, j] + 1.0, name="C")
    mod = tvm.IRModule({"main": te.create_prim_func([a, c])})
    sch = Schedule(mod, seed=3)
    block = sch.get_sblock("B")
    sch.compute_at(block, sch.sample_compute_location(block))
    session = load_trace(sch, mod)
    info = session.steps[1].decision
    assert info.kind == "compute_location"
    assert [label for _, label in info.choices] == [
        "inline", "root", "loop i (extent 64)", "loop j (extent 64)"
    ]  # fmt: skip
    assert info.value == -2 and 'T.sblock("B")' not in session.final_module.script()  # inlined
    session.set_decision(1, 1)
    assert session.decisions() == {1: 1}
    assert 'T.sblock("B")' in session.final_module.script()  # computed at loop j
    with pytest.raises(TraceError, match=r"5 is not one of the legal choices: -2 \(inline\)"):
        session.set_decision(1, 5)


def test_a_trace_on_a_module_it_does_not_fit_is_refused(book):
    import tvm
    from tvm import te

    from mlc_jupyter.trace import load_trace

    _, sch = book
    a = te.placeholder((8,), name="A")
    other = tvm.IRModule({"main": te.create_prim_func([a, te.compute((8,), lambda i: a[i], "D")])})
    with pytest.raises(TraceError, match="the trace does not replay on this module: "):
        load_trace(sch, mod=other)


def test_picking_a_timing_row_that_does_not_exist_is_refused(session):
    with pytest.raises(TraceError, match=r"there is no timing row 5 \(history has 0\)"):
        session.result(5)


def test_a_cuda_tune_results_trace_replays_for_cuda_and_its_pick_builds_for_cuda():
    from build_support import cuda_tune_result

    from mlc_jupyter.compilation import build_module
    from mlc_jupyter.trace import TraceSession

    session = TraceSession.load(cuda_tune_result())
    assert session.target.kind.name == "cuda"
    picked = session.result()
    assert picked.target.kind.name == "cuda"
    assert build_module(picked).target.kind.name == "cuda"  # %mlc_build / %mlc_time of it
