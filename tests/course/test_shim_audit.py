"""The course shims' side effects against the book's TVM: which arrays are written, which are
copied, what comes back, and on which device the data is.

Each test types the book's spelling into a real IPython shell in course mode and checks what the
old API did with its arguments (read in that TVM's sources: ``python/tvm/runtime/ndarray.py``,
``module.py``, ``relax/vm.py``, ``_ffi/registry.py``). ``docs/course_shims.md`` is the table of
these behaviours; ``test_the_shim_table_names_every_audit_test_and_every_shim`` keeps it and this
file in step.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from IPython.utils.capture import capture_output

REPO = Path(__file__).resolve().parents[2]
TABLE = REPO / "docs" / "course_shims.md"

#: A TE matmul (a plain cell cannot hold a TVMScript class here: the test shell's __main__ is
#: pytest's), and an in-place kernel that adds B into A.
KERNELS = """import numpy as np
import tvm
from tvm import te, relax
from tvm.script import tir as T

A = te.placeholder((16, 16), "float32", name="A")
B = te.placeholder((16, 16), "float32", name="B")
k = te.reduce_axis((0, 16), "k")
C = te.compute((16, 16), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
matmul = te.create_prim_func([A, B, C])

@T.prim_func
def add_into(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
    for i in range(4):
        with T.block("A"):
            vi = T.axis.spatial(4, i)
            A[vi] = A[vi] + B[vi]

rng = np.random.default_rng(0)
a_np = rng.random((16, 16), dtype="float32")
b_np = rng.random((16, 16), dtype="float32")
"""

RELAX_ADD = """
bb = relax.BlockBuilder()
x = relax.Var("x", relax.TensorStructInfo((4,), "float32"))
with bb.function("main", [x]):
    with bb.dataflow():
        y = bb.emit(relax.op.add(x, x))
        out = bb.emit_output(y)
    bb.emit_func_output(out)
add_mod = bb.get()
"""


def _run(shell, text: str):
    with capture_output() as captured:
        result = shell.run_cell(text, store_history=True)
    assert result.success, (result.error_before_exec or result.error_in_exec, captured.stdout)
    return shell.user_ns, captured


@pytest.fixture
def ns(shell):
    return _run(shell, KERNELS)[0]


def test_nd_array_copies_its_input_onto_the_cpu_by_default(shell, ns):
    ns, _ = _run(shell, "x = np.arange(4, dtype='float32')\nt = tvm.nd.array(x)\nx[0] = 7\n")
    t = ns["t"]
    assert t.numpy()[0] == 0  # a copy: writing x afterwards leaves t alone
    assert str(t.device) == "cpu:0" and t.dtype == "float32" and tuple(t.shape) == (4,)
    ns, _ = _run(shell, "u = tvm.nd.array(t, tvm.cpu(0))\nv = tvm.nd.array([1, 2, 3])\n")
    assert not ns["u"].same_as(t) and ns["v"].dtype == "int64"  # np.array's dtype, as before


def test_nd_empty_makes_a_new_tensor_of_the_shape_dtype_and_device(shell, ns):
    ns, _ = _run(shell, "e = tvm.nd.empty((2, 3))\nf = tvm.nd.empty((2,), 'int32', tvm.cpu(0))\n")
    assert tuple(ns["e"].shape) == (2, 3) and ns["e"].dtype == "float32"  # the old default dtype
    assert ns["f"].dtype == "int32" and str(ns["f"].device) == "cpu:0"
    assert isinstance(ns["e"], ns["tvm"].runtime.Tensor)  # tvm.nd.NDArray of the book


def test_copyfrom_writes_the_tensor_and_returns_it(shell, ns):
    ns, _ = _run(
        shell,
        "t = tvm.nd.empty((4,), 'float32')\nsrc = np.arange(4.0)\nr = t.copyfrom(src)\n"
        "r2 = t.copyfrom([4, 3, 2, 1])\n",
    )
    assert ns["r"] is ns["t"] and ns["r2"] is ns["t"]
    assert ns["t"].numpy().tolist() == [4, 3, 2, 1] and ns["t"].dtype == "float32"
    assert ns["src"].tolist() == [0, 1, 2, 3]  # the source is only read


def test_copyto_a_tensor_writes_it_and_copyto_a_device_makes_a_new_one(shell, ns):
    ns, _ = _run(
        shell,
        "s = tvm.nd.array(np.arange(4, dtype='float32'))\nd = tvm.nd.empty((4,))\n"
        "r = s.copyto(d)\nn = s.copyto(tvm.cpu(0))\n",
    )
    assert ns["r"] is ns["d"] and ns["d"].numpy().tolist() == [0, 1, 2, 3]
    assert not ns["n"].same_as(ns["s"]) and str(ns["n"].device) == "cpu:0"


def test_numpy_and_asnumpy_return_a_copy(shell, ns):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        ns, _ = _run(
            shell,
            "s = tvm.nd.array(np.arange(4, dtype='float32'))\nn = s.numpy()\nn[0] = 9\n"
            "m = s.asnumpy()\n",
        )
    assert ns["s"].numpy()[0] == 0 and isinstance(ns["n"], np.ndarray)
    assert ns["m"].tolist() == [0, 1, 2, 3]


def test_a_built_function_writes_the_callers_tensors_in_place_and_returns_none(shell, ns):
    ns, _ = _run(
        shell,
        'lib = tvm.build(matmul, target="llvm")\na_nd = tvm.nd.array(a_np)\n'
        "b_nd = tvm.nd.array(b_np)\nc_nd = tvm.nd.empty((16, 16))\nc_before = c_nd\n"
        'r = lib["main"](a_nd, b_nd, c_nd)\n',
    )
    assert ns["r"] is None and ns["c_nd"] is ns["c_before"]
    np.testing.assert_allclose(ns["c_nd"].numpy(), ns["a_np"] @ ns["b_np"], rtol=1e-5)
    np.testing.assert_array_equal(ns["a_nd"].numpy(), ns["a_np"])  # inputs only read
    # an input the kernel writes in place is the caller's tensor too
    ns, _ = _run(
        shell,
        'lib2 = tvm.build(add_into, target="llvm")\nx = tvm.nd.array(np.ones(4, "float32"))\n'
        'lib2["add_into"](x, tvm.nd.array(np.full(4, 2, "float32")))\n',
    )
    assert ns["x"].numpy().tolist() == [3, 3, 3, 3]


def test_a_built_function_given_numpy_arrays_writes_them_back(shell, ns):
    ns, _ = _run(
        shell,
        'lib = tvm.build(matmul, target="llvm")\nc_np = np.zeros((16, 16), "float32")\n'
        'lib["main"](a_np, b_np, c_np)\n'
        'lib2 = tvm.build(add_into, target="llvm")\nx_np = np.ones(4, "float32")\n'
        'lib2["add_into"](x_np, np.full(4, 2, "float32"))\n',
    )
    np.testing.assert_allclose(ns["c_np"], ns["a_np"] @ ns["b_np"], rtol=1e-5)
    assert ns["x_np"].tolist() == [3, 3, 3, 3]  # the in-place input, not only the last one


def test_time_evaluator_runs_on_the_callers_arrays_with_the_old_numbers(shell, ns):
    ns, captured = _run(
        shell,
        'lib = tvm.build(matmul, target="llvm")\na_nd = tvm.nd.array(a_np)\n'
        'b_nd = tvm.nd.array(b_np)\nc_nd = tvm.nd.empty((16, 16), dtype="float32")\n'
        'f_timer = lib.time_evaluator("main", tvm.cpu())\nres = f_timer(a_nd, b_nd, c_nd)\n'
        'res4 = lib.time_evaluator("main", tvm.cpu(), number=3, repeat=4)(a_nd, b_nd, c_nd)\n'
        "print(res)\n",
    )
    np.testing.assert_allclose(ns["c_nd"].numpy(), ns["a_np"] @ ns["b_np"], rtol=1e-5)
    res, res4 = ns["res"], ns["res4"]
    assert len(res.results) == 1 and len(res4.results) == 4  # repeat samples
    assert res.mean == pytest.approx(float(np.mean(res.results)))
    assert (res.number, res.repeat, res.min_repeat_ms) == (10, 1, 0)  # the old defaults
    assert isinstance(res, ns["tvm"].runtime.module.BenchmarkResult)
    printed = captured.stdout
    assert "Execution time summary:" in printed and "mean (ms)" in printed
    assert printed.count("note: 1 sample of 10 calls") == 1 and "%mlc_time calibrates" in printed


def test_tvm_main_names_the_only_function_of_a_build(shell, ns):
    ns, _ = _run(
        shell,
        'lib = tvm.build(matmul, target="llvm")\na_nd = tvm.nd.array(a_np)\n'
        'b_nd = tvm.nd.array(b_np)\nc_nd = tvm.nd.empty((16, 16), dtype="float32")\n'
        'res = lib.time_evaluator("__tvm_main__", tvm.cpu(), number=2)(a_nd, b_nd, c_nd)\n'
        'd_nd = tvm.nd.empty((16, 16), dtype="float32")\nlib["__tvm_main__"](a_nd, b_nd, d_nd)\n'
        'e_nd = tvm.nd.empty((16, 16), dtype="float32")\nlib(a_nd, b_nd, e_nd)\n'
        "both = tvm.IRModule({'f': matmul, 'g': matmul.with_attr('global_symbol', 'g')})\n"
        'two = tvm.build(both, target="llvm")\n',
    )
    expected = ns["a_np"] @ ns["b_np"]
    np.testing.assert_allclose(ns["c_nd"].numpy(), expected, rtol=1e-5)
    np.testing.assert_allclose(ns["d_nd"].numpy(), expected, rtol=1e-5)
    np.testing.assert_allclose(ns["e_nd"].numpy(), expected, rtol=1e-5)  # lib(...): the entry
    assert len(ns["res"].results) == 1 and ns["res"].number == 2
    with capture_output() as captured:
        shell.run_cell('two.time_evaluator("__tvm_main__", tvm.cpu())', store_history=True)
    assert "CallError" in captured.stdout and "this build has f, g" in captured.stdout


def test_time_evaluator_of_a_gpu_device_without_a_gpu_says_no_gpu(shell, ns):
    with capture_output() as captured:
        shell.run_cell(
            'lib = tvm.build(matmul, target="llvm")\nt = lib.time_evaluator("main", tvm.cuda(0))\n',
            store_history=True,
        )
    if shell.user_ns.get("t") is not None:
        pytest.skip("a GPU is present")
    assert "NoGPUError: line 2" in captured.stdout and "no GPU is present" in captured.stdout


def test_te_create_schedule_steps_a_tensorir_schedule_in_place(shell, ns):
    ns, _ = _run(
        shell,
        "s = te.create_schedule(C.op)\nbefore = s.mod\n"
        "jo, ji = s[C].split(C.op.axis[1], factor=4)\nstart = s.start_mod\n",
    )
    from mlc_jupyter.tvm_compat import structural_equal

    fresh = ns["te"].create_prim_func([ns["A"], ns["B"], ns["C"]])
    assert structural_equal(ns["start"]["main"], fresh)  # the tensors are untouched
    assert not structural_equal(ns["s"].mod, ns["before"])  # the step is in the schedule
    assert ns["s"].sch.trace.insts[-1].kind.name == "Split"  # at once, as a TensorIR step
    assert type(ns["jo"]).__name__ == "LoopRV"


def test_tvm_lower_gives_the_tensorir_function_of_the_args_and_allocates_the_rest(shell, ns):
    ns, _ = _run(
        shell,
        "E = te.compute((16, 16), lambda i, j: C[i, j] + 1.0, name='E')\n"
        "s = te.create_schedule([C.op, E.op])\nlowered = tvm.lower(s, [A, B])\n",
    )
    func = ns["lowered"]["main"]
    assert [str(p.name) for p in func.params] == ["A", "B"]
    assert sorted(str(b.name) for b in func.body.block.alloc_buffers) == ["C", "E"]
    assert "sblock" in func.script()  # TensorIR, not the old flattened loops


def test_tvm_build_of_a_te_schedule_fills_the_results_args_leave_out_with_scratch(shell, ns):
    ns, _ = _run(
        shell,
        "s = te.create_schedule(C.op)\nlib = tvm.build(s, [A, B], target='llvm')\n"
        "a_nd = tvm.nd.array(a_np)\nb_nd = tvm.nd.array(b_np)\n"
        'lib["__tvm_main__"](a_nd, b_nd)\n'
        'res = lib.time_evaluator("default_function", tvm.cpu(), number=2)(a_nd, b_nd)\n',
    )
    lib = ns["lib"]
    assert lib.built.functions == ["default_function"]
    assert [p.name for p in lib.built.signatures["default_function"].params] == ["A", "B", "C"]
    (scratch,) = lib.scratch_tensors("default_function")  # held by the module, reused
    np.testing.assert_allclose(scratch.numpy(), ns["a_np"] @ ns["b_np"], rtol=1e-5)
    np.testing.assert_array_equal(ns["a_nd"].numpy(), ns["a_np"])  # inputs only read
    assert len(ns["res"].results) == 1


def test_relax_build_gives_tvms_executable_and_the_vm_returns_new_tensors(shell, ns):
    ns, _ = _run(
        shell,
        RELAX_ADD + 'ex = relax.build(add_mod, target="llvm")\n'
        "vm = relax.VirtualMachine(ex, tvm.cpu())\n"
        "x_nd = tvm.nd.array(np.arange(4, dtype='float32'))\nout = vm['main'](x_nd)\n",
    )
    tvm = ns["tvm"]
    assert isinstance(ns["ex"], tvm.runtime.Executable) and ns["ex"].built.relax
    assert isinstance(ns["vm"], tvm.relax.VirtualMachine)
    out = ns["out"]
    assert isinstance(out, tvm.runtime.Tensor) and str(out.device) == "cpu:0"
    assert out.numpy().tolist() == [0, 2, 4, 6] and ns["x_nd"].numpy().tolist() == [0, 1, 2, 3]


def test_set_input_invoke_stateful_get_outputs_run_the_function_once(shell, ns):
    ns, _ = _run(
        shell,
        RELAX_ADD + 'ex = relax.build(add_mod, target="llvm")\n'
        "vm = relax.VirtualMachine(ex, tvm.cpu())\nx_nd = tvm.nd.array(np.ones(4, 'float32'))\n"
        "r1 = vm.set_input('main', x_nd)\nr2 = vm.invoke_stateful('main')\n"
        "out = vm.get_outputs('main')\n",
    )
    assert ns["r1"] is None and ns["r2"] is None
    assert ns["out"].numpy().tolist() == [2, 2, 2, 2] and ns["x_nd"].numpy().tolist() == [1] * 4


def test_vm_module_time_evaluator_times_the_callers_arguments_with_the_old_numbers(shell, ns):
    ns, _ = _run(
        shell,
        RELAX_ADD + 'ex = relax.build(add_mod, target="llvm")\n'
        "vm = relax.VirtualMachine(ex, tvm.cpu())\nx_nd = tvm.nd.array(np.ones(4, 'float32'))\n"
        'ftimer = vm.module.time_evaluator("main", tvm.cpu(), number=5, repeat=3)\n'
        "res = ftimer(x_nd)\n",
    )
    assert len(ns["res"].results) == 3 and ns["res"].mean > 0
    assert ns["x_nd"].numpy().tolist() == [1] * 4  # a Relax function returns, never writes


def test_register_func_registers_a_packed_function_whose_tensors_are_the_callers(shell, ns):
    ns, _ = _run(
        shell,
        '@tvm.register_func("env.audit_double", override=True)\n'
        "def double(x, out):\n    out.copyfrom(x.numpy() * 2)\n"
        "x_nd = tvm.nd.array(np.ones(4, 'float32'))\nout_nd = tvm.nd.empty((4,))\n"
        'r = tvm.get_global_func("env.audit_double")(x_nd, out_nd)\n',
    )
    tvm = ns["tvm"]
    assert ns["r"] is None and ns["out_nd"].numpy().tolist() == [2] * 4  # written in place
    # the decorator returns the registered packed function, as the old one did
    assert type(ns["double"]) is type(tvm.get_global_func("env.audit_double"))


def test_contrib_utils_tempdir_and_clang_create_llvm(shell, ns):
    ns, _ = _run(
        shell,
        "from tvm.contrib import utils, clang\ntemp = utils.tempdir()\n"
        'path = temp.relpath("x.ll")\n'
        'll = clang.create_llvm("int audit_one(void) { return 1; }", output=path)\n',
    )
    assert Path(ns["path"]).parent.is_dir() and ns["path"].endswith("x.ll")
    assert Path(ns["path"]).read_text() == ns["ll"]  # output= receives the returned text


def test_a_clang_compile_that_is_stopped_leaves_no_library_and_names_the_compiler(
    tmp_path, monkeypatch
):
    from mlc_jupyter.course.contrib.clang import compile_shared
    from mlc_jupyter.errors import BuildError

    monkeypatch.setenv("MLC_JUPYTER_CACHE", str(tmp_path))
    monkeypatch.setenv("MLC_JUPYTER_COMPILER_TIMEOUT_S", "0.001")
    code = "int audit_stopped(void) { return 2; }"
    with pytest.raises(BuildError, match=r"^(gcc|cc|clang) did not finish within 0\.001 s"):
        compile_shared(code)
    folder = tmp_path / "course" / "kernels"
    assert not list(folder.glob("*.so")), "a stopped compile left a library to load"
    monkeypatch.delenv("MLC_JUPYTER_COMPILER_TIMEOUT_S")
    library = compile_shared(code)  # the next compile is whole, under its own name
    assert library.parent == folder and [p.name for p in folder.glob("*.so")] == [library.name]


def _table_rows() -> list[dict[str, str]]:
    lines = [x for x in TABLE.read_text().splitlines() if x.startswith("|")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    return [dict(zip(header, (c.strip() for c in x.strip("|").split("|")), strict=True))
            for x in lines[2:]]  # fmt: skip


#: Names of ``mlc_course`` outside this audit, and why.
NOT_AUDITED = {
    "tuning": "ms.tune_tir / compile_tir: tests/course/test_book.py (chapter 4) and tests/tune",
    "tir": "a namespace (the course's tvm.tir names), no arrays",
    "TensorIntrin": "a registration that re-runs replace: tests/course/test_course_mode.py",
    "relax_const": "a value constructor: tests/course/test_ch5.py",
    "structural_equal": "a comparison, no arrays",
    "structural_hash": "a hash, no arrays",
    "check_definition": "the loop-extent check: tests/course/test_course_mode.py",
    "CourseModule": "the result of build, audited through it",
    "TESchedule": "the result of create_schedule (te.Schedule in annotations), audited through it",
    "name_handles": "the cell's names for schedule handles, no arrays: tests/course/test_course_mode.py",
}


def test_the_shim_table_names_every_audit_test_and_every_shim():
    import mlc_jupyter.course as course

    rows = _table_rows()
    here = Path(__file__).read_text()
    tests = set(re.findall(r"^def (test_\w+)\(shell, ns\)", here, flags=re.M))
    named = {row["test"].strip("`") for row in rows}
    assert named == tests, (
        f"rows without a test: {named - tests}; tests without a row: {tests - named}"
    )
    shims = {m for row in rows for m in re.findall(r"mlc_course\.(\w+)", row["ours"])}
    assert shims <= set(course.__all__), shims - set(course.__all__)
    missing = set(course.__all__) - shims - set(NOT_AUDITED)
    assert not missing, f"shims with no row in {TABLE.name}: {missing}"
