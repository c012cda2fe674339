"""Course mode: ordinary cells in the book's spelling run on TVM 0.27 in a real IPython shell.

Modules are parsed with ``%%tir`` here (the test shell's ``__main__`` is pytest's, so TVMScript
*classes* in plain cells are exercised in a real kernel by the book notebooks, tests/course/
test_book.py); everything else is the book's plain Python, typed as the book types it.
"""

from __future__ import annotations

import numpy as np
import pytest
from course_support import listing, run_listing
from IPython.utils.capture import capture_output

from mlc_jupyter.compilation.cached_build import Built
from mlc_jupyter.errors import CellRaised, LoopExtentError, TVMScriptError


def _run(shell, text: str):
    with capture_output() as captured:
        result = shell.run_cell(text, store_history=True)
    return result, captured


def test_the_books_plain_python_builds_runs_and_times_mm_relu(shell):
    run_listing(shell, "ch2_mm_relu")
    result, _ = _run(
        shell,
        "import numpy as np\nimport tvm\n"
        'sch = tvm.tir.Schedule(MyModule)\nblock_Y = sch.get_block("Y", func_name="mm_relu")\n'
        "i, j, k = sch.get_loops(block_Y)\nj0, j1 = sch.split(j, factors=[None, 4])\n"
        'rt_lib = tvm.build(MyModule, target="llvm")\n'
        'a_np = np.random.rand(128, 128).astype("float32")\n'
        'b_np = np.random.rand(128, 128).astype("float32")\n'
        "a_nd = tvm.nd.array(a_np)\nb_nd = tvm.nd.array(b_np)\n"
        'c_nd = tvm.nd.empty((128, 128), dtype="float32")\n'
        'func_mm_relu = rt_lib["mm_relu"]\nfunc_mm_relu(a_nd, b_nd, c_nd)\n'
        "np.testing.assert_allclose(np.maximum(a_np @ b_np, 0), c_nd.numpy(), rtol=1e-5)\n"
        'f_timer = rt_lib.time_evaluator("mm_relu", tvm.cpu())\n'
        "timing = f_timer(a_nd, b_nd, c_nd)\n"
        'rt_after = tvm.build(sch.mod, target="llvm")\n',
    )
    assert result.success, result.error_in_exec
    ns = shell.user_ns
    assert ns["timing"].mean > 0 and len(ns["timing"].results) == 1  # the old repeat=1
    assert isinstance(ns["rt_lib"].built, Built)  # %mlc_time rt_lib finds the same build
    assert ns["rt_lib"].imports == [] and "define" in ns["rt_lib"].get_source()


def test_course_mode_off_gives_stock_tvm_and_on_restores_the_course(shell):
    try:
        shell.run_line_magic("mlc_course", "off")
        result, _ = _run(shell, "from tvm.script import tir as T")
        assert isinstance(result.error_in_exec, ImportError)
        assert "mlc_course" not in shell.user_ns or not shell.input_transformers_post.count(1)
    finally:
        shell.run_line_magic("mlc_course", "on")
    result, _ = _run(shell, "from tvm.script import tir as T")
    assert result.success


def test_mlc_course_shows_the_mode_and_the_last_cell_side_by_side(shell):
    _run(shell, "import tvm\nx = 1\nlib_fn = tvm.build\n")
    with capture_output() as captured:
        shell.run_line_magic("mlc_course", "")
    shown = captured.outputs[0].data
    assert "course mode is on" in shown["text/plain"]
    assert "lib_fn = tvm.build" in shown["text/plain"]
    assert "lib_fn = mlc_course.build" in shown["text/plain"]
    assert "as typed" in shown["text/html"] and "as run on TVM 0.27" in shown["text/html"]


def test_rerunning_a_split_fails_with_a_short_message_at_the_typed_line(shell):
    run_listing(shell, "ch2_mm_relu")
    _run(
        shell,
        'import tvm\nsch = tvm.tir.Schedule(MyModule)\ni, j, k = sch.get_loops(sch.get_block("Y", func_name="mm_relu"))',
    )
    first, _ = _run(shell, "j0, j1 = sch.split(j, factors=[None, 4])")
    again, captured = _run(shell, "j0, j1 = sch.split(j, factors=[None, 4])")
    assert first.success and not again.success
    text = captured.stdout
    assert "ValueError: line 1, column 10: The loop no longer exists in the IRModule" in text
    assert "re-run from the cell that creates sch" in text
    assert "Traceback" not in text and len(text.splitlines()) < 8


def test_a_gpu_array_without_a_gpu_says_so_at_the_users_column(shell):
    _result, captured = _run(
        shell, "import numpy as np, tvm\nx = tvm.nd.array(np.zeros(4), tvm.cuda(0))"
    )
    if shell.user_ns.get("x") is not None:
        return  # a GPU is present
    assert "NoGPUError: line 2, column 5: no GPU is present" in captured.stdout
    assert "x = tvm.nd.array(np.zeros(4), tvm.cuda(0))" in captured.stdout


def test_a_gone_spelling_fails_at_its_line_with_the_027_replacement(shell):
    """The cell runs up to the gone statement, as Python would: what came before it exists."""
    result, captured = _run(
        shell, "import tvm\nimport numpy as np\nx = 1\nfrom tvm import relay\ny = 2\n"
    )
    assert isinstance(result.error_in_exec, ImportError)
    assert "GoneError: line 4, column 1: from tvm import relay is gone in TVM 0.27" in (
        captured.stdout
    )
    assert "relax.frontend" in captured.stdout and "Traceback" not in captured.stdout
    assert shell.user_ns["x"] == 1 and "np" in shell.user_ns and "y" not in shell.user_ns


def test_a_gone_spelling_in_a_function_fails_only_when_called_and_at_its_column(shell):
    result, _ = _run(shell, "import tvm\ndef f(mod):\n    return tvm.relay.build(mod)\n")
    assert result.success
    result, captured = _run(shell, "f(None)")
    assert isinstance(result.error_in_exec, AttributeError)
    assert "GoneError: line 3, column 12: tvm.relay is gone in TVM 0.27" in captured.stdout
    assert "    return tvm.relay.build(mod)" in captured.stdout


def test_a_syntax_error_is_placed_at_the_column_the_user_typed(shell):
    result, captured = _run(shell, "x = tvm.nd.array(a) +* 2\n")
    assert isinstance(result.error_before_exec, TVMScriptError)
    assert result.error_before_exec.column == len("x = tvm.nd.array(a) +*")
    assert "x = tvm.nd.array(a) +* 2" in captured.stdout


def test_a_python_error_in_a_translated_cell_shows_the_line_as_typed(shell):
    result, captured = _run(shell, "import tvm\ny = tvm.nd.array(undefined_name)\n")
    assert isinstance(result.error_in_exec, NameError)
    assert "tvm.nd.array(undefined_name)" in captured.stdout
    assert "mlc_course" not in captured.stdout


def test_rerunning_cells_that_register_functions_and_intrinsics_replaces_them(shell):
    cell = (
        'import tvm\n@tvm.register_func("env.course_add_one")\ndef add_one(x):\n    return x + 1\n'
    )
    assert _run(shell, cell)[0].success and _run(shell, cell)[0].success
    assert tvm_global("env.course_add_one")(1) == 2
    # the book's section 6.2 intrinsic cell, run twice as a plain cell
    intrinsic = (
        "import tvm\nfrom tvm.script import tir as T\n"
        + listing("ch6_tmm16_intrin")
        + ('\ntvm.tir.TensorIntrin.register("tmm16", tmm16_desc, tmm16_impl)\n')
    )
    for _ in range(2):
        result, captured = _run(shell, intrinsic)
        assert result.success, captured.stdout


def tvm_global(name: str):
    from mlc_jupyter.tvm_compat import tvm

    return tvm().get_global_func(name)


def test_errors_raised_inside_tvm_in_plain_cells_keep_the_cell_line(shell):
    run_listing(shell, "ch2_mm_relu")
    result, captured = _run(
        shell, 'import tvm\nsch = tvm.tir.Schedule(MyModule)\nsch.get_block("nope")\n'
    )
    assert isinstance(result.error_in_exec, Exception)
    assert "line 3, column 1" in captured.stdout and "nope" in captured.stdout
    assert isinstance(CellRaised("x", raised="ScheduleError", line=1), Exception)
    assert np.isfinite(1.0)


def test_a_magics_usage_error_stays_one_line_in_course_mode(shell):
    result, captured = _run(shell, "%mlc_time NoSuchModule\n")
    assert type(result.error_in_exec).__name__ == "UsageError"
    assert (captured.stdout + captured.stderr).strip() == (
        "UsageError: %mlc_time: cannot find 'NoSuchModule' in the notebook: "
        "name 'NoSuchModule' is not defined"
    )


def test_a_dataflow_block_without_output_in_a_plain_cell_points_at_the_use(shell):
    result, captured = _run(
        shell,
        "from tvm.script import relax as R\n\n@R.function\n"
        'def main(x: R.Tensor((3, 4), "float32")):\n'
        "    with R.dataflow():\n        gv = R.add(x, x)\n    return gv\n",
    )
    assert isinstance(result.error_in_exec, Exception)
    assert "line 7, column 12: Undefined variable: gv" in captured.stdout
    assert "dataflow block of line 5" in captured.stdout
    assert "end the block with R.output(gv)" in captured.stdout


LOOP_EXTENT_FUNC = """@T.prim_func
def short(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32")):
    for i in range(127):
        with T.block("B"):
            vi = T.axis.spatial(128, i)
            B[vi] = A[vi] + 1.0
"""


def test_a_plain_cell_loop_extent_mismatch_is_reported_as_the_tir_magic_reports_it(shell):
    result, captured = _run(
        shell, "import tvm\nfrom tvm.script import tir as T\n\n" + LOOP_EXTENT_FUNC
    )
    plain = result.error_in_exec
    assert isinstance(plain, LoopExtentError), captured.stdout
    try:
        shell.run_cell_magic("tir", "--quiet", LOOP_EXTENT_FUNC)
    except LoopExtentError as err:
        magic = err
    assert plain.message == magic.message and plain.hint == magic.hint
    assert (plain.line, magic.line) == (8, 6)  # the T.axis line (the magic's line 1 is %%tir)
    assert plain.source_line == magic.source_line == "            vi = T.axis.spatial(128, i)"
    assert 'LoopExtentError: line 8, column 13: block "B" in short' in captured.stdout
    assert "Traceback" not in captured.stdout


def test_a_plain_cell_without_a_mismatch_defines_and_shows_as_before(shell):
    text = "import tvm\nfrom tvm.script import tir as T\n\n" + LOOP_EXTENT_FUNC.replace(
        "range(127)", "range(128)"
    )
    result, _ = _run(shell, text + "short\n")
    assert result.success and result.result is shell.user_ns["short"]


OUT_OF_BOUNDS = """import tvm
from tvm import relax
from tvm.script import tir as T

@T.prim_func
def shifted(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32")):
    for i in range(128):
        with T.block("B"):
            vi = T.axis.spatial(128, i)
            B[vi] = A[vi + 1]

bb = relax.BlockBuilder()
x = relax.Var("x", relax.TensorStructInfo((128,), "float32"))
with bb.function("main", [x]):
    with bb.dataflow():
        gv = bb.add_func(shifted, "shifted")
        y = bb.emit(relax.call_tir(gv, (x,), relax.TensorStructInfo((128,), "float32")))
        out = bb.emit_output(y)
    bb.emit_func_output(out)
ex = relax.build(bb.get(), target="llvm")
vm = relax.VirtualMachine(ex, tvm.cpu())
"""


def test_a_plain_cell_relax_build_with_an_out_of_bounds_kernel_is_refused_at_its_lines(shell):
    result, captured = _run(shell, OUT_OF_BOUNDS)
    assert type(result.error_in_exec).__name__ == "OutOfBoundsError", captured.stdout
    assert "vm" not in shell.user_ns and "ex" not in shell.user_ns  # refused before it ran
    text = captured.stdout
    assert "OutOfBoundsError: line 20, column 6: shifted: A[vi + 1] goes out of bounds at " in text
    number = result.execution_count
    assert f"at In [{number}] line 10: index vi + 1" in text  # the access's own cell line
    assert 'ex = relax.build(bb.get(), target="llvm")' in text and "hint: nothing ran" in text


def test_plain_cell_builds_share_the_disk_cache_and_the_checked_switch(shell):
    from mlc_jupyter.config import checked_builds

    cell = OUT_OF_BOUNDS.replace("A[vi + 1]", "A[vi]")
    try:
        shell.run_line_magic("mlc_checked", "on")
        assert checked_builds()
        result, captured = _run(shell, cell)
        assert result.success, captured.stdout
        built = shell.user_ns["ex"].built
        assert built.checked and "|checked" in built.key
        _run(shell, "ex2 = relax.build(bb.get(), target='llvm')")
        assert shell.user_ns["ex2"].built.cached  # the same build, from the project's cache
    finally:
        shell.run_line_magic("mlc_checked", "off")


def test_a_cell_typed_with_a_printed_erratum_says_it_is_the_books_and_shows_the_fix(shell):
    result, captured = _run(
        shell,
        "import tvm\nsch = None\nIPython.display.HTML(code2html(sch.mod.script())))\n",
    )
    assert isinstance(result.error_before_exec, TVMScriptError)
    text = captured.stdout
    assert "line 3, column" in text and "unmatched ')'" in text
    assert "a known erratum of the printed book (sections 4.3, 4.4.1)" in text
    assert "the line should read: IPython.display.HTML(code2html(sch.mod.script()))" in text


def test_a_python_error_on_a_printed_erratum_is_named_at_its_line(shell):
    result, captured = _run(
        shell,
        "import numpy as np\n"
        "def lnumpy_mm_relu_v2(a, b, c):\n    c[:] = a\n"
        "a_np, b_np, c_np = np.ones(2), np.ones(2), np.empty(2)\n"
        "numpy_mm_relu_v2(a_np, b_np, c_np)\n",
    )
    assert isinstance(result.error_in_exec, NameError)
    text = captured.stdout
    assert "NameError: line 5, column 1: name 'numpy_mm_relu_v2' is not defined" in text
    assert "a known erratum of the printed book (section 2.4.4)" in text
    assert "the line should read: lnumpy_mm_relu_v2(a_np, b_np, c_np)" in text
    assert "Traceback" not in text


def test_an_attribute_error_in_a_function_on_a_printed_erratum_is_named_at_its_line(shell):
    result, captured = _run(
        shell,
        "import tvm\nfrom tvm.contrib import utils\n\ndef ll_code():\n"
        '    temp = utils.tempdir()\n    ll_path = temp.repath("temp.ll")\n\nll_code()\n',
    )
    assert isinstance(result.error_in_exec, AttributeError)
    text = captured.stdout
    assert "AttributeError: line 6, column" in text
    assert 'the line should read: ll_path = temp.relpath("temp.ll")' in text


def test_the_books_tune_tir_shows_the_live_progress_of_mlc_tune(shell, tmp_path):
    """...and takes the work dir's lock as %mlc_tune does: with another process tuning there, it
    waits and says for whom; with course mode off (as in a script) it says so on stderr."""
    import threading

    from build_support import matmul
    from records_support import holder

    shell.user_ns["mod"] = matmul(64)
    other = holder(tmp_path)  # another notebook's tuning run holds the work dir
    threading.Timer(2.0, other.stdin.close).start()
    result, captured = _run(
        shell,
        "from tvm import meta_schedule as ms\n"
        f'database = ms.tune_tir(mod=mod, target="llvm --num-cores=1", work_dir="{tmp_path}", '
        "max_trials_global=4, num_trials_per_iter=4)\n",
    )
    assert result.success, result.error_in_exec
    other.wait(timeout=30)
    assert f"waiting for the tuning run of pid {other.pid}, started" in captured.stdout
    assert "tuning in" in captured.stdout and "trials" in captured.stdout  # progress shown
    shell.run_line_magic("mlc_course", "off")
    try:
        from mlc_jupyter.course import tuning as ms
        from mlc_jupyter.course.progress import progress_view

        assert progress_view() is None  # off: the shims tune silently, as in a script
        other = holder(tmp_path)
        threading.Timer(1.0, other.stdin.close).start()
        with capture_output() as script:
            ms.tune_tir(matmul(64), "llvm --num-cores=1", str(tmp_path), 4,
                        num_trials_per_iter=4)  # fmt: skip  # resumed: nothing left to measure
        other.wait(timeout=30)
        assert f"waiting for the tuning run of pid {other.pid}, started" in script.stderr
        assert "tuning in" not in script.stdout + script.stderr  # only the wait is said
    finally:
        shell.run_line_magic("mlc_course", "on")


@pytest.mark.slow
def test_in_a_real_kernel_plain_cell_modules_get_the_magics_checks_and_errata_are_named(tmp_path):
    """TVMScript classes in plain cells need a real kernel (the test shell's __main__ is
    pytest's): a loop-extent mismatch and an out-of-bounds build, each at its cell line."""
    import nbformat
    from nbclient import NotebookClient

    header = "import tvm\nfrom tvm.script import tir as T\n\n@tvm.script.ir_module\nclass M:\n"
    body = (
        "    @T.prim_func\n"
        '    def main(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32")):\n'
        "        for i in range(EXTENT):\n"
        '            with T.block("B"):\n'
        "                vi = T.axis.spatial(128, i)\n"
        "                B[vi] = A[INDEX]\n"
    )
    cells = [
        "%load_ext mlc_jupyter",
        header + body.replace("EXTENT", "127").replace("INDEX", "vi"),
        header
        + body.replace("EXTENT", "128").replace("INDEX", "vi + 1")
        + 'lib = tvm.build(M, target="llvm")\n',
        "sch = tvm.tir.Schedule(M)\nIPython.display.HTML(code2html(sch.mod.script())))\n",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    client = NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(tmp_path)}})  # fmt: skip
    client.execute()
    errors = [
        (o.ename, "\n".join(o.traceback))
        for c in nb.cells[1:]
        for o in c.outputs
        if o.output_type == "error"
    ]
    assert [e for e, _ in errors] == ["LoopExtentError", "OutOfBoundsError", "TVMScriptError"]
    assert 'line 10, column 17: block "B" in M.main: iterator vi has domain 128' in errors[0][1]
    assert "line 12, column 7: main: A[vi + 1] goes out of bounds at In [3] line 11" in errors[1][1]
    assert "a known erratum of the printed book (sections 4.3, 4.4.1)" in errors[2][1]
    assert all("Traceback" not in text for _, text in errors)


RANDOM_SEARCH = """import tvm

def stochastic_schedule_mm(sch: tvm.tir.Schedule):
    block_C = sch.get_block("C", "main")
    i, j, k = sch.get_loops(block=block_C)
    j_factors = sch.sample_perfect_tile(loop=j, n=2)
    j_0, j_1 = sch.split(loop=j, factors=j_factors)
    sch.reorder(i, j_0, k, j_1)
    sch.decompose_reduction(block_C, k)
    return sch

def random_search(mod, num_trials=3):
    for i in range(num_trials):
        sch = stochastic_schedule_mm(tvm.tir.Schedule(mod, seed=i + 1))
    return sch

sch = random_search(MyModule)
"""


def test_a_schedule_made_by_the_books_functions_shows_their_names_in_mlc_trace(shell):
    """Chapter 4's random_search: the trace replay reads `sch.reorder(i, j_0, k, j_1)` as the
    book's function wrote it, not MetaSchedule's `sch.reorder(l1, l6, l3, l7)`."""
    from trace_support import BOOK_MODULE

    shell.run_cell_magic("tir", "--quiet", BOOK_MODULE)
    result, _ = _run(shell, RANDOM_SEARCH)
    assert result.success, result.error_in_exec
    texts = [s["text"] for s in shell.run_line_magic("mlc_trace", "sch").steps]
    assert "sch.reorder(i, j_0, k, j_1)" in texts
    assert "i, j, k = sch.get_loops(block=block_C)" in texts
    result, _ = _run(shell, 'first, rest = "j0,k".split(",")\n')  # a str's split: untouched
    assert result.success and shell.user_ns["rest"] == "k"
    shell.run_line_magic("mlc_course", "off")
    try:  # stock 0.27: the cell runs as typed (0.27's names), the trace keeps MetaSchedule's names
        off = RANDOM_SEARCH.replace("get_block", "get_sblock").replace("tvm.tir.S", "tvm.s_tir.S")
        result, _ = _run(shell, off)
        assert result.success, result.error_in_exec
        texts = [s["text"] for s in shell.run_line_magic("mlc_trace", "sch").steps]
        assert "sch.reorder(l1, l6, l3, l7)" in texts
    finally:
        shell.run_line_magic("mlc_course", "on")


def test_a_module_with_t_bool_function_attributes_builds_and_keeps_noalias(shell):
    """The concept blog's hand-edited module says ``"tir.noalias": T.bool(True)``, as its TVM
    printed it: it builds, and LLVM gets noalias."""
    shell.run_cell_magic(
        "tir",
        "--quiet",
        "from tvm.script import tir as T\n"
        "@T.prim_func\n"
        'def double(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):\n'
        '    T.func_attr({"tir.noalias": T.bool(True)})\n'
        "    for i in range(8):\n"
        '        with T.block("B"):\n'
        "            vi = T.axis.spatial(8, i)\n"
        "            B[vi] = A[vi] * T.float32(2)\n",
    )
    result, _ = _run(
        shell,
        'import numpy as np\nimport tvm\nrt_lib = tvm.build(double, target="llvm")\n'
        "a = np.arange(8, dtype='float32')\nb = np.empty(8, dtype='float32')\n"
        'rt_lib["__tvm_main__"](a, b)\n',
    )
    assert result.success, result.error_in_exec
    assert bool(shell.user_ns["double"].attrs["tirx.noalias"])
    np.testing.assert_array_equal(shell.user_ns["b"], np.arange(8) * 2)


def test_under_mlc_isolate_on_the_books_tvm_build_crashes_its_cell_not_the_shell(shell):
    from mlc_jupyter.errors import KernelCrashError

    shell.run_cell_magic(
        "tir",
        "-q",
        "@T.prim_func\n"
        'def scatter(A: T.Buffer((8,), "float32"), idx: T.Buffer((8,), "int32"), '
        'B: T.Buffer((8,), "float32")):\n'
        "    for i in range(8):\n"
        '        with T.block("B"):\n'
        "            vi = T.axis.spatial(8, i)\n"
        "            B[idx[vi]] = A[vi]\n",
    )
    try:
        shell.run_line_magic("mlc_isolate", "on")
        result, _ = _run(
            shell,
            'import numpy as np\nimport tvm\nrt_lib = tvm.build(scatter, target="llvm")\n'
            "a = tvm.nd.array(np.arange(8, dtype='float32'))\n"
            "idx = tvm.nd.array(np.array([7, 6, 5, 50_000_000, 3, 2, 1, 0], dtype='int32'))\n"
            "b = tvm.nd.array(np.zeros(8, dtype='float32'))\n",
        )
        assert result.success, result.error_in_exec
        assert shell.user_ns["rt_lib"].built.isolated
        result, captured = _run(shell, 'rt_lib["scatter"](a, idx, b)\n')
        assert isinstance(result.error_in_exec, KernelCrashError)
        assert "scatter crashed with SIGSEGV" in captured.stdout
        result, _ = _run(
            shell,
            "idx = tvm.nd.array(np.arange(8, dtype='int32')[::-1].copy())\n"
            'rt_lib["scatter"](a, idx, b)\n',
        )
        assert result.success, result.error_in_exec
        np.testing.assert_array_equal(shell.user_ns["b"].numpy(), np.arange(8)[::-1])
    finally:
        shell.run_line_magic("mlc_isolate", "off")
