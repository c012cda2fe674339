"""No out-of-bounds kernel runs unannounced: the static check at every build path, checked builds."""

from __future__ import annotations

import functools

import model_support
import numpy as np
import pytest
from build_support import LISTINGS
from IPython.utils.capture import capture_output

from mlc_jupyter.cells import parse_script
from mlc_jupyter.compilation import build_module
from mlc_jupyter.compilation.bounds import find_out_of_bounds
from mlc_jupyter.compilation.device_code import find_nvcc
from mlc_jupyter.errors import OutOfBoundsError

MM_RELU = (LISTINGS / "ch2_mm_relu.py").read_text()
#: The commonest beginner's slip: one element past the end of the output.
SHIFTED = MM_RELU.replace("C[vi, vj] = T.max", "C[vi + 1, vj] = T.max")
#: Its cell line: the magic line is line 1.
SHIFTED_LINE = 2 + next(
    n for n, text in enumerate(MM_RELU.splitlines()) if "C[vi, vj] = T.max" in text
)

GATHER = """
@T.prim_func
def gather(A: T.Buffer((128,), "float32"), I: T.Buffer((16,), "int32"),
           B: T.Buffer((16,), "float32")):
    for i in range(16):
        with T.block("B"):
            vi = T.axis.spatial(16, i)
            B[vi] = A[I[vi]]
"""

SPLIT_WITHOUT_PREDICATE = """b = sch.get_block("C")
i, j = sch.get_loops(b)
sch.reorder(j, i)
j0, j1 = sch.split(j, factors=[None, 5], disable_predication=True)
"""


def rendered(err: BaseException) -> str:
    return "\n".join(err._render_traceback_())


def test_an_index_shifted_past_the_end_is_refused_at_its_cell_line_before_anything_runs(shell):
    number = shell.execution_count
    shell.run_cell("%%tir --quiet\n" + SHIFTED, store_history=True)
    result = shell.run_cell("%mlc_build MyModule", store_history=True)
    err = result.error_in_exec
    assert isinstance(err, OutOfBoundsError)
    text = rendered(err)
    assert "C[vi + 1, vj]" in text and "index vi + 1 of dimension 0 reaches 1..128" in text
    assert "C allows 0..127" in text
    assert f"In [{number}] line {SHIFTED_LINE}" in text
    assert f"{SHIFTED_LINE:>4} |                 C[vi + 1, vj] = T.max" in text
    assert "nothing ran" in text
    assert "MyModule_lib" not in shell.user_ns
    assert len(text.splitlines()) <= 25


def test_every_listing_of_the_book_passes_the_static_check():
    namespace: dict = {}
    for path in sorted(LISTINGS.glob("*.py")):
        source = path.read_text()
        if "@T.prim_func" not in source and "@R.function" not in source:
            continue  # a Python listing (a BlockBuilder function), not a TVMScript cell
        kind = "relax" if "R." in source else "tir"
        parsed = parse_script(source, dict(namespace), kind=kind)
        for name, obj in parsed.objects.items():
            if hasattr(obj, "functions_items") or hasattr(obj, "body"):
                assert find_out_of_bounds(_module(obj)) == [], f"{path.name}: {name}"


def _module(obj):
    from mlc_jupyter.compilation.signatures import as_module

    return as_module(obj)


def test_a_schedule_step_that_drops_the_split_predicate_is_named_with_its_line(shell):
    shell.run_cell_magic("tir", "-q", MM_RELU)
    with capture_output():
        shell.run_cell_magic("mlc_schedule", "MyModule --static", SPLIT_WITHOUT_PREDICATE)
    with pytest.raises(OutOfBoundsError) as caught:
        build_module(shell.user_ns["MyModule_sch"])
    text = rendered(caught.value)
    assert 'block "C" binds vj = j_0 * 5 + j_1, which reaches 0..129' in text
    assert "introduced by schedule step 4 (%%mlc_schedule line 5)" in text
    assert "disable_predication=True" in text


def test_the_stepper_times_a_step_that_goes_out_of_bounds_as_a_failed_row(shell):
    from mlc_jupyter.schedule import ScheduleSession
    from mlc_jupyter.widgets.schedule_stepper import ScheduleStepper

    shell.run_cell_magic("tir", "-q", MM_RELU)
    session = ScheduleSession(shell.user_ns["MyModule"], SPLIT_WITHOUT_PREDICATE, first_line=2)
    stepper = ScheduleStepper(session)
    timing = stepper.time_step(4)
    assert timing.median_s is None
    assert "goes out of bounds" in timing.error and "schedule step 4" in timing.error
    assert "failed:" in stepper.status and "out of bounds" in stepper.status
    assert stepper.time_step(2).median_s is not None  # the steps before it still time


def test_a_data_dependent_index_raises_in_a_checked_build_and_leaves_memory_intact(shell):
    shell.run_cell_magic("tir", "-q", GATHER)
    with capture_output() as out:
        shell.run_line_magic("mlc_build", "gather --checked")
    assert "checked (every buffer index is tested at run time)" in out.stdout
    lib = shell.user_ns["gather_lib"]
    a = np.arange(128, dtype="float32")
    np.testing.assert_array_equal(lib.gather(a, np.arange(16, dtype="int32") * 2), a[:32:2])
    bad = np.arange(16, dtype="int32")
    bad[5] = 100_000
    out_buffer = np.full(16, -1.0, "float32")
    with pytest.raises(OutOfBoundsError) as caught:
        lib.gather(a, bad, out_buffer)
    text = rendered(caught.value)
    assert "gather: an index left its buffer at run time" in text
    assert "data-dependent index: gather: A[" in text and "line 9" in text
    np.testing.assert_array_equal(out_buffer, -1.0)  # nothing was copied back


def test_checked_builds_can_be_switched_on_for_the_session(shell, monkeypatch):
    monkeypatch.setenv("MLC_JUPYTER_CHECKED", "0")
    shell.run_cell_magic("tir", "-q", GATHER)
    with capture_output() as out:
        shell.run_line_magic("mlc_checked", "on")
        shell.run_line_magic("mlc_build", "gather")
        shell.run_line_magic("mlc_checked", "off")
        shell.run_line_magic("mlc_build", "gather --as plain")
    assert "checked builds: on" in out.stdout and "checked builds: off" in out.stdout
    assert shell.user_ns["gather_lib"].checked and not shell.user_ns["plain"].checked


def test_tuning_refuses_an_out_of_bounds_workload_before_it_runs_any_candidate(tmp_path):
    from mlc_jupyter.tune import tune

    mod = parse_script(SHIFTED, kind="tir").value
    with pytest.raises(OutOfBoundsError, match="C\\[vi \\+ 1, vj\\]"):
        tune(mod, trials=4, work_dir=tmp_path)
    assert not (tmp_path / "database_tuning_record.json").exists()


#: A 3-tap window sum over a zero-padded input: the padding guards the load (``LIMIT`` 15 keeps
#: it inside A; 16 lets the last window read one past A's end).
PADDED_WINDOW = """
@T.prim_func
def window(A: T.Buffer((14,), "float32"), B: T.Buffer((14,), "float32")):
    for i, k in T.grid(14, 3):
        with T.block("B"):
            vi, vk = T.axis.remap("SR", [i, k])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + T.if_then_else(
                1 <= vi + vk and vi + vk < LIMIT, A[vi + vk - 1], T.float32(0)
            )
"""
#: A split that does not divide, guarded by a block predicate (as dlight binds loops to threads).
PREDICATED_SPLIT = """
@T.prim_func
def scale(A: T.Buffer((100,), "float32"), B: T.Buffer((100,), "float32")):
    for i0, i1 in T.grid(4, 32):
        with T.block("B"):
            vi = T.axis.spatial(128, i0 * 32 + i1)
            T.where(i0 * 32 + i1 < LIMIT)
            B[vi] = A[vi] * T.float32(2)
"""
#: The tail of a loop guarded by an ``if`` with a ``likely`` hint (what loop partitioning writes).
LIKELY_TAIL = """
@T.prim_func
def tail(A: T.Buffer((100,), "float32"), B: T.Buffer((100,), "float32")):
    for i0, i1 in T.grid(4, 32):
        if T.likely(i0 * 32 + i1 < LIMIT):
            B[i0 * 32 + i1] = A[i0 * 32 + i1] + T.float32(1)
"""


@pytest.mark.parametrize(
    ("source", "inside", "outside", "size", "reference"),
    [
        (PADDED_WINDOW, 15, 16, 14, lambda a: np.convolve(a, np.ones(3, "float32"))[1:15]),
        (PREDICATED_SPLIT, 100, 101, 100, lambda a: a * 2),
        (LIKELY_TAIL, 100, 101, 100, lambda a: a + 1),
    ],
    ids=["if_then_else padding", "block predicate", "likely if"],
)
def test_an_access_kept_inside_by_its_guard_builds_and_a_guard_that_lets_it_out_is_refused(
    source, inside, outside, size, reference
):
    built = build_module(parse_script(source.replace("LIMIT", str(inside)), kind="tir").value)
    a = np.random.default_rng(0).standard_normal(size).astype("float32")
    b = np.zeros(size, "float32")
    built(a, b)
    np.testing.assert_allclose(b, reference(a), rtol=1e-5, atol=1e-6)
    leaky = parse_script(source.replace("LIMIT", str(outside)), kind="tir").value
    with pytest.raises(OutOfBoundsError, match="goes out of bounds") as caught:
        build_module(leaky)
    assert "A[" in str(caught.value) or "B[" in str(caught.value)


#: Real models and an input each: every operator kind a learner imports first.
CORPUS = {
    "ResNet-18": (model_support.resnet18, (1, 3, 224, 224)),
    "MobileNet block": (model_support.mobilenet_block, (1, 32, 56, 56)),
    "encoder layer": (model_support.encoder_layer, (1, 128, 256)),
    "book MLP": (model_support.mlp, (1, 784)),
}


@functools.cache
def _imported(name: str):
    import torch

    from mlc_jupyter.models import import_model

    make, shape = CORPUS[name]
    model_support.torch_seed()
    return import_model(make(), (torch.randn(*shape),)).mod


@pytest.mark.slow
@pytest.mark.parametrize("target", ["llvm", "cuda -arch=sm_90a"])
@pytest.mark.parametrize("name", list(CORPUS))
def test_every_kernel_of_real_models_builds_with_the_default_schedules_and_no_refusal(name, target):
    """dlight's guards and the padded convolutions of a CUDA build are not out of bounds."""
    pytest.importorskip("torch")
    mod = _imported(name)
    built = build_module(mod, target, persist=False)  # the default schedules, then the check
    kernels = [gv for gv, f in built.mod.functions_items() if hasattr(f, "body")]
    assert kernels and find_out_of_bounds(built.mod) == []
    if target.startswith("cuda") and find_nvcc() is not None:
        assert built.device_code.compiled, built.device_code.note  # PTX and a cubin, no GPU


def test_a_vector_access_past_the_end_is_still_refused():
    source = """
@T.prim_func
def shifted(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    for i in range(4):
        B[T.ramp(i * 4, 1, 4)] = A[T.ramp(i * 4 + 1, 1, 4)]
"""
    found = find_out_of_bounds(_module(parse_script(source, kind="tir").value))
    assert [f.buffer for f in found] == ["A"] and found[0].high == "16"


#: A view of the output's memory that declares more than the output holds: ``V[vi + I[0]]``
#: passes the view's own shape (64) but leaves ``B``'s 16 floats when ``I[0]`` is 1 or more.
OVERSIZED_VIEW = """
@T.prim_func
def spill(A: T.Buffer((16,), "float32"), I: T.Buffer((1,), "int32"), B: T.Buffer((4, 4), "float32")):
    V = T.decl_buffer((64,), "float32", data=B.data)
    for i in range(16):
        with T.block("V"):
            vi = T.axis.spatial(16, i)
            V[vi + I[0]] = A[vi]
"""

#: Correct views: the second half of ``B`` read as its own buffer (``elem_offset``), ``B`` as a
#: 4x4 matrix, and ``B``'s bytes as twice as many float16.
FITTING_VIEWS = """
@T.prim_func
def views(A: T.Buffer((8,), "float32"), B: T.Buffer((16,), "float32")):
    Hi = T.decl_buffer((8,), "float32", data=B.data, elem_offset=8)
    M = T.decl_buffer((4, 4), "float32", data=B.data)
    H = T.decl_buffer((32,), "float16", data=B.data)
    for i in range(8):
        with T.block("hi"):
            vi = T.axis.spatial(8, i)
            Hi[vi] = A[vi]
    for i in range(2):
        with T.block("lo"):
            vi = T.axis.spatial(2, i)
            M[0, vi] = T.float32(-1)
    with T.block("bits"):
        H[31] = H[31]
"""


def test_a_checked_build_checks_a_view_against_the_memory_it_views(shell):
    shell.run_cell_magic("tir", "-q", OVERSIZED_VIEW)
    with capture_output():
        shell.run_line_magic("mlc_build", "spill --checked")
    lib = shell.user_ns["spill_lib"]
    a = np.arange(16, dtype="float32")
    out = np.zeros((4, 4), "float32")
    lib.spill(a, np.zeros(1, "int32"), out)
    np.testing.assert_array_equal(out.ravel(), a)
    guard = np.full((4, 4), -1.0, "float32")
    with pytest.raises(OutOfBoundsError) as caught:
        lib.spill(a, np.array([40], "int32"), guard)  # 40..55: inside V's 64, past B's 16
    text = rendered(caught.value)
    assert "spill: an index left its buffer at run time" in text
    assert "view: spill: V is declared over B.data" in text and "B's 16 float32" in text
    assert "fits in the buffer whose data it takes" in text
    np.testing.assert_array_equal(guard, -1.0)


def test_correct_views_of_a_buffer_build_and_run_checked(shell):
    shell.run_cell_magic("tir", "-q", FITTING_VIEWS)
    with capture_output():
        shell.run_line_magic("mlc_build", "views --checked")
    a = np.arange(8, dtype="float32") + 1
    b = np.zeros(16, "float32")
    shell.user_ns["views_lib"].views(a, b)
    np.testing.assert_array_equal(b, [-1, -1, 0, 0, 0, 0, 0, 0, *a])


def test_a_view_that_provably_reaches_past_the_memory_it_views_is_refused_before_it_runs(shell):
    overflowing = OVERSIZED_VIEW.replace("(64,)", "(32,)").replace("range(16)", "range(32)")
    overflowing = overflowing.replace("spatial(16, i)", "spatial(32, i)")
    overflowing = overflowing.replace("V[vi + I[0]] = A[vi]", "V[vi] = A[vi % 16]")
    shell.run_cell("%%tir --quiet\n" + overflowing, store_history=True)
    result = shell.run_cell("%mlc_build spill", store_history=True)
    assert isinstance(result.error_in_exec, OutOfBoundsError)
    text = rendered(result.error_in_exec)
    assert "spill: V[vi] goes out of bounds" in text and "reaches 0..31" in text
    assert "but V, a view of B's memory, allows 0..15" in text and "nothing ran" in text
    assert find_out_of_bounds(_module(parse_script(OVERSIZED_VIEW, {}, kind="tir").value)) == []
    assert find_out_of_bounds(_module(parse_script(FITTING_VIEWS, {}, kind="tir").value)) == []
