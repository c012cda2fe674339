"""%%tir and %%relax in a real IPython shell: binding, display, the course dialect, errors."""

from __future__ import annotations

import numpy as np
import pytest
from IPython.utils.capture import capture_output

from mlc_jupyter import parse_tir

MM_RELU_COURSE = """%%tir
from tvm.script import tir as T

@tvm.script.ir_module
class MyModule:
    @T.prim_func
    def mm_relu(A: T.Buffer[(128, 128), "float32"],
                B: T.Buffer[(128, 128), "float32"],
                C: T.Buffer[(128, 128), "float32"]):
        T.func_attr({"global_symbol": "mm_relu", "tir.noalias": True})
        Y = T.alloc_buffer((128, 128), dtype="float32")
        for i, j, k in T.grid(128, 128, 128):
            with T.block("Y"):
                vi = T.axis.spatial(128, i)
                vj = T.axis.spatial(128, j)
                vk = T.axis.reduce(128, k)
                with T.init():
                    Y[vi, vj] = T.float32(0)
                Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
        for i, j in T.grid(128, 128):
            with T.block("C"):
                vi = T.axis.spatial(128, i)
                vj = T.axis.spatial(128, j)
                C[vi, vj] = T.max(Y[vi, vj], T.float32(0))
"""


def _compile(mod):
    import tvm

    from mlc_jupyter.tvm_compat import host_cpu

    return tvm.compile(mod, target=tvm.target.Target({"kind": "llvm", "mcpu": host_cpu()}))


def test_course_mm_relu_cell_binds_a_module_that_computes_relu_of_a_matmul(shell):
    result = shell.run_cell(MM_RELU_COURSE)
    assert result.success, result.error_in_exec
    mod = shell.user_ns["MyModule"]
    assert shell.user_ns["_"] is mod
    lib = _compile(mod)
    a = np.random.rand(128, 128).astype("float32")
    b = np.random.rand(128, 128).astype("float32") - 0.5
    import tvm

    # TVM kernels assume 64-byte aligned buffers: pass TVM tensors, not raw NumPy arrays.
    args = [tvm.runtime.tensor(x) for x in (a, b, np.empty((128, 128), "float32"))]
    lib["mm_relu"](*args)
    np.testing.assert_allclose(args[2].numpy(), np.maximum(a @ b, 0), rtol=1e-4, atol=1e-4)


def test_course_noalias_attribute_becomes_the_one_tvm_027_honours(shell):
    shell.run_cell(MM_RELU_COURSE)
    attrs = shell.user_ns["MyModule"]["mm_relu"].attrs
    assert bool(attrs["tirx.noalias"]) and "tir.noalias" not in attrs


def test_module_is_shown_highlighted_with_a_plain_text_fallback(shell):
    with capture_output() as captured:
        shell.run_cell(MM_RELU_COURSE)
    mod = shell.user_ns["MyModule"]
    formatter = shell.display_formatter.formatters["text/html"]
    html = formatter.lookup(mod)(mod)
    assert "<pre" in html and "var(--jp-mirror-editor" in html and "mm_relu" in html
    assert "T.sblock" in shell.display_formatter.formatters["text/plain"](mod)  # TVM's own
    # the cell's echo is in the learner's own spelling: the book's T.block, tir, no s_tir
    (echo,) = [out.data["text/plain"] for out in captured.outputs]
    assert 'T.block("Y")' in echo and "T.sblock" not in echo
    assert "tirx" not in echo and "s_tir=True" not in echo
    assert shell.user_ns["_"] is mod


def test_a_cell_in_tvm_027_spelling_is_echoed_as_written(shell):
    with capture_output() as captured:
        shell.run_cell(
            "%%tir\n@T.prim_func(s_tir=True)\n"
            'def one(A: T.Buffer((4,), "float32")):\n'
            "    for i in range(4):\n"
            '        with T.sblock("A"):\n'
            "            vi = T.axis.spatial(4, i)\n"
            "            A[vi] = T.float32(1)\n"
        )
    assert 'T.sblock("A")' in captured.stdout


def test_quiet_binds_without_showing_and_underscore_holds_the_object(shell):
    with capture_output() as captured:
        shell.run_cell(MM_RELU_COURSE.replace("%%tir", "%%tir --quiet"))
    assert "MyModule" in shell.user_ns and shell.user_ns["_"] is shell.user_ns["MyModule"]
    assert "mm_relu" not in captured.stdout and not captured.outputs


def test_names_from_earlier_cells_are_visible_to_the_script(shell):
    shell.run_cell("n = 64")
    result = shell.run_cell(
        '%%tir\n@T.prim_func\ndef add_one(A: T.Buffer((n,), "float32"), B: T.Buffer((n,), "float32")):\n'
        "    for i in range(n):\n"
        '        with T.block("B"):\n'
        "            vi = T.axis.spatial(n, i)\n"
        "            B[vi] = A[vi] + T.float32(1)\n"
    )
    assert result.success
    assert 'A: T.Buffer((64,), "float32")' in shell.user_ns["add_one"].script()


def test_name_argument_renames_a_single_definition(shell):
    shell.run_cell(MM_RELU_COURSE.replace("%%tir", "%%tir Renamed"))
    assert "Renamed" in shell.user_ns and "MyModule" not in shell.user_ns


def test_every_top_level_prim_func_is_bound_under_its_own_name(shell):
    cell = (
        "%%tir\n"
        "from tvm.script import tir as T\n"
        "@T.prim_func\n"
        'def first(A: T.Buffer((4,), "float32")):\n'
        "    for i in range(4):\n"
        "        A[i] = T.float32(1)\n"
        "@T.prim_func\n"
        'def second(A: T.Buffer((4,), "float32")):\n'
        "    for i in range(4):\n"
        "        A[i] = T.float32(2)\n"
    )
    assert shell.run_cell(cell).success
    assert {"first", "second"} <= set(shell.user_ns)
    assert shell.user_ns["_"] is shell.user_ns["second"]


def test_name_argument_with_several_definitions_is_refused(shell):
    cell = (
        "%%tir Only\n"
        "@T.prim_func\ndef a(A: T.Buffer((4,), 'float32')):\n    A[0] = T.float32(1)\n"
        "@T.prim_func\ndef b(A: T.Buffer((4,), 'float32')):\n    A[0] = T.float32(1)\n"
    )
    result = shell.run_cell(cell)
    assert not result.success
    assert "NAME renames a single definition, but this cell defines 2: a, b" in str(
        result.error_in_exec
    )
    assert "Only" not in shell.user_ns and "a" not in shell.user_ns


RELAX_MLP = """%%relax
from tvm.script import relax as R
from tvm.script import tir as T

@tvm.script.ir_module
class MyModule:
    @T.prim_func
    def relu0(x: T.handle, y: T.handle):
        n = T.int64()
        X = T.match_buffer(x, (1, n), "float32")
        Y = T.match_buffer(y, (1, n), "float32")
        for i, j in T.grid(1, n):
            with T.block("Y"):
                vi, vj = T.axis.remap("SS", [i, j])
                Y[vi, vj] = T.max(X[vi, vj], T.float32(0))

    @R.function
    def main(x: R.Tensor((1, "m"), "float32")):
        m = T.int64()
        with R.dataflow():
            lv0 = R.call_tir(MyModule.relu0, (x,), out_sinfo=R.Tensor((1, m), dtype="float32"))
            R.output(lv0)
        return lv0
"""


def test_relax_cell_mixing_prim_func_and_function_builds_and_runs(shell):
    import tvm

    assert shell.run_cell(RELAX_MLP).success
    mod = shell.user_ns["MyModule"]
    ex = _compile(mod)
    vm = tvm.relax.VirtualMachine(ex, tvm.cpu())
    x = np.random.randn(1, 10).astype("float32")
    np.testing.assert_allclose(vm["main"](tvm.runtime.tensor(x)).numpy(), np.maximum(x, 0))


def _error(shell, cell):
    with capture_output() as captured:
        result = shell.run_cell(cell)
    assert not result.success
    return result.error_in_exec, captured.stdout + captured.stderr


def test_undefined_variable_is_reported_at_its_cell_line_with_a_caret(shell):
    err, shown = _error(
        shell, MM_RELU_COURSE.replace("A[vi, vk] * B[vk, vj]", "A[vi, vk] * D[vk, vj]")
    )
    assert type(err).__name__ == "TVMScriptError"
    assert str(err).startswith("line 19, column 53: Undefined variable: D")
    assert "  19 |" in shown and "^" in shown
    assert len(shown.strip().splitlines()) <= 6, shown  # a few lines, not a long traceback


def test_unknown_t_name_is_reported_at_its_line(shell):
    err, _shown = _error(shell, MM_RELU_COURSE.replace("T.max(", "T.maximum_of("))
    assert str(err).startswith("line 24, column 29:")
    assert "has no attribute 'maximum_of'" in str(err)


def test_python_syntax_error_is_reported_at_its_line(shell):
    err, _ = _error(shell, MM_RELU_COURSE.replace("class MyModule:", "class MyModule"))
    assert str(err).startswith("line 5, column 15: invalid syntax")


def test_wrong_buffer_shape_is_reported_at_the_access(shell):
    err, _ = _error(shell, MM_RELU_COURSE.replace("C[vi, vj] = T.max", "C[vi, vj, 0] = T.max"))
    assert str(err).startswith("line 24, column 17:")
    assert "C is 2-dimensional" in str(err)


def test_loop_extent_that_differs_from_the_iterator_domain_is_reported(shell):
    err, _ = _error(shell, MM_RELU_COURSE.replace("T.grid(128, 128):", "T.grid(128, 127):"))
    assert type(err).__name__ == "LoopExtentError"
    assert str(err) == (
        'line 23, column 17: block "C" in MyModule.mm_relu: iterator vj has domain 128 but its '
        "loop runs 127 times"
    )


def test_python_name_error_at_top_level_is_reported_at_its_line(shell):
    err, _ = _error(shell, "%%tir\nx = 1\ny = undefined_thing + 1\n")
    assert str(err).startswith("line 3, column 5: NameError")


def test_failed_cell_keeps_what_was_already_bound(shell):
    shell.run_cell(MM_RELU_COURSE)
    before = shell.user_ns["MyModule"]
    _error(shell, MM_RELU_COURSE.replace("T.max(", "T.nope("))
    assert shell.user_ns["MyModule"] is before


def test_python_api_parses_without_ipython():
    func = parse_tir(
        "@T.prim_func\ndef f(A: T.Buffer((4,), 'float32')):\n    for i in range(4):\n"
        '        with T.block("a"):\n            vi = T.axis.spatial(4, i)\n'
        "            A[vi] = T.float32(0)\n"
    )
    assert type(func).__name__ == "PrimFunc"


@pytest.mark.parametrize("kind", ["tir", "relax"])
def test_magic_help_is_generated_from_its_parser(shell, kind):
    with capture_output() as captured:
        shell.run_line_magic("pinfo", f"%%{kind}")
    assert "--quiet" in captured.stdout


def test_relax_call_tir_with_a_bare_function_name_suggests_cls(shell):
    cell = RELAX_MLP.replace("R.call_tir(MyModule.relu0,", "R.call_tir(relu0,")
    err, _ = _error(shell, cell)
    assert str(err).startswith("line 21, column 30: Undefined variable: relu0")
    assert "cls.f or ModuleName.f" in err.hint


DATAFLOW_WITHOUT_OUTPUT = """%%relax
from tvm.script import relax as R

@I.ir_module
class Model:
    @R.function
    def main(x: R.Tensor((3, 4), "float32")):
        with R.dataflow():
            lv0 = R.add(x, x)
            gv = R.multiply(lv0, x)
        return gv
"""


def test_a_dataflow_block_without_output_points_at_the_use_and_says_to_output_it(shell):
    err, _ = _error(shell, DATAFLOW_WITHOUT_OUTPUT)
    assert str(err).startswith("line 11, column 16: Undefined variable: gv")
    assert "dataflow block of line 8" in err.hint and "R.output(gv)" in err.hint
    assert "Model" not in shell.user_ns


def test_a_name_left_out_of_a_dataflow_blocks_output_is_told_to_join_it(shell):
    cell = DATAFLOW_WITHOUT_OUTPUT.replace(
        "            gv = R.multiply(lv0, x)\n",
        "            gv = R.multiply(lv0, x)\n            R.output(lv0)\n",
    )
    err, _ = _error(shell, cell)
    assert str(err).startswith("line 12, column 16: Undefined variable: gv")
    assert "list it in the block's R.output(...)" in err.hint
