"""%mlc_build and %mlc_time in a real IPython shell: the book's chapter 2 flow, CUDA, errors."""

from __future__ import annotations

import numpy as np
import pytest
from build_support import LISTINGS
from IPython.utils.capture import capture_output

from mlc_jupyter.compilation import gpu_present
from mlc_jupyter.compilation.cached_build import Built
from mlc_jupyter.errors import BuildError, CallError, NoGPUError, TargetError
from mlc_jupyter.measure.compare import TimingReport

FAST = "--repeat 3 --min-repeat-ms 5"

SCHEDULE_CH2 = """import tvm
sch = tvm.s_tir.Schedule(MyModule)
block_Y = sch.get_sblock("Y", func_name="mm_relu")
i, j, k = sch.get_loops(block_Y)
j0, j1 = sch.split(j, factors=[None, 8])
sch.reorder(j0, k, j1)
sch.reverse_compute_at(sch.get_sblock("C", "mm_relu"), j0)
MyModuleJ8 = sch.mod
"""


@pytest.fixture
def ch2(shell):
    shell.run_cell_magic("tir", "-q", (LISTINGS / "ch2_mm_relu.py").read_text())
    shell.run_cell(SCHEDULE_CH2)
    return shell


def test_mlc_build_binds_a_callable_build_and_shows_the_resolved_target(ch2):
    with capture_output() as out:
        ch2.run_line_magic("mlc_build", 'MyModule --target "llvm -num-cores=2" --force')
    lib = ch2.user_ns["MyModule_lib"]
    assert isinstance(lib, Built)
    assert "MyModule_lib: built in" in out.stdout and "llvm -num-cores=2 -mcpu=" in out.stdout
    a, b = np.ones((128, 128), "float32"), np.ones((128, 128), "float32")
    np.testing.assert_allclose(lib.mm_relu(a, b), np.full((128, 128), 128.0))


def test_rebuilding_an_unchanged_module_says_it_was_cached_and_force_rebuilds(ch2):
    ch2.run_line_magic("mlc_build", "MyModule --as first --force")  # not the disk's copy
    with capture_output() as out:
        ch2.run_line_magic("mlc_build", "MyModule --as again")
    assert "again: cached, built before" in out.stdout
    with capture_output() as out:
        ch2.run_line_magic("mlc_build", "MyModule --as forced --force")
    assert "forced: built in" in out.stdout


def test_the_book_chapter_2_flow_times_both_variants_against_numpy(ch2):
    ch2.run_line_magic("mlc_build", 'MyModule --target "llvm -num-cores=2"')
    ch2.run_line_magic("mlc_build", 'MyModuleJ8 --target "llvm -num-cores=2"')
    report = ch2.run_line_magic(
        "mlc_time", f'MyModule_lib MyModuleJ8_lib --ref "np.maximum(A @ B, 0)" {FAST} -o'
    )
    assert isinstance(report, TimingReport)
    assert report.names == ["MyModule_lib", "MyModuleJ8_lib", "numpy", "torch"]
    assert all(t.correct for t in report.timings)
    first, j8 = report["MyModule_lib"], report["MyModuleJ8_lib"]
    assert j8.speedup == pytest.approx(first.median_s / j8.median_s) and first.gflops > 0


def test_mlc_time_shows_a_table_and_an_svg_bar_chart(ch2):
    ch2.run_line_magic("mlc_build", "MyModule")
    with capture_output() as out:
        result = ch2.run_line_magic("mlc_time", f"MyModule_lib.mm_relu MyModuleJ8 {FAST}")
    assert result is None
    bundle = out.outputs[0].data
    assert "<svg" in bundle["text/html"] and "MyModuleJ8" in bundle["text/html"]
    assert "median" in bundle["text/plain"] and "GFLOP/s" in bundle["text/plain"]


def test_a_mismatching_variant_is_reported_not_timed(ch2):
    report = ch2.run_line_magic("mlc_time", f'MyModule --ref "A @ B + 1" {FAST} -o')
    assert report.timings[0].correct is False and report.timings[0].median_s is None


def test_mlc_time_accepts_given_arguments_and_a_callable_reference(ch2):
    ch2.run_cell(
        "import numpy as np\nX = np.ones((128, 128), 'float32')\n"
        "def ref(A, B):\n    return np.maximum(A @ B, 0)"
    )
    report = ch2.run_line_magic("mlc_time", f"MyModule --args '(X, X)' --ref ref {FAST} -o")
    assert report.timings[0].correct is True


def test_show_cuda_prints_the_book_vector_add_kernel(shell):
    shell.run_cell_magic("tir", "-q", (LISTINGS / "ch6_vector_add.py").read_text())
    shell.run_cell(
        "import tvm\nsch = tvm.s_tir.Schedule(MyModuleVecAdd)\n"
        "i0, i1 = sch.split(sch.get_loops(sch.get_sblock('C'))[0], [None, 128])\n"
        "sch.bind(i0, 'blockIdx.x'); sch.bind(i1, 'threadIdx.x')\nGPUAdd = sch.mod"
    )
    with capture_output() as out:
        shell.run_line_magic("mlc_build", "GPUAdd --target cuda --show cuda")
    html = out.outputs[0].data["text/html"]
    assert "__global__" in out.outputs[0].data["text/plain"] and "<pre" in html
    if not gpu_present("cuda"):
        with pytest.raises(NoGPUError, match="no GPU is present"):
            shell.user_ns["GPUAdd_lib"].main(np.ones(1024, "float32"), np.ones(1024, "float32"))


def test_an_unbound_gpu_kernel_fails_with_a_short_message(shell):
    shell.run_cell_magic("tir", "-q", (LISTINGS / "ch6_vector_add.py").read_text())
    with pytest.raises(BuildError, match="not bound to blockIdx/threadIdx"):
        shell.run_line_magic("mlc_build", "MyModuleVecAdd --target cuda")
    assert "MyModuleVecAdd" in shell.user_ns


def test_errors_render_in_a_few_lines_in_the_shell(ch2):
    with capture_output() as out:
        ch2.run_cell('%mlc_build MyModule --target "llvm -num-corez=2"')
    assert "TargetError: unknown flag 'num-corez'" in out.stdout
    assert "Traceback" not in out.stdout and len(out.stdout.splitlines()) <= 4


def test_a_call_with_a_wrong_shape_names_the_argument(ch2):
    ch2.run_line_magic("mlc_build", "MyModule")
    with pytest.raises(CallError, match="argument 'A' has shape"):
        ch2.user_ns["MyModule_lib"].mm_relu(np.ones((2, 2), "float32"), np.ones((2, 2), "float32"))


def test_an_undefined_module_name_is_a_usage_error(shell):
    with capture_output() as out:
        shell.run_cell("%mlc_build NoSuchModule")
    assert "'NoSuchModule' is not defined" in out.stderr + out.stdout


def test_bad_targets_keep_the_namespace(ch2):
    with pytest.raises(TargetError):
        ch2.run_line_magic("mlc_build", "MyModule --target llvn")
    assert "MyModule" in ch2.user_ns and "MyModule_lib" not in ch2.user_ns


def test_mlc_time_o_as_a_cells_last_line_shows_the_table_once_like_timeit_o(ch2):
    ch2.run_line_magic("mlc_build", "MyModule")
    with capture_output() as out:  # store_history: cells numbered as in a notebook
        assert ch2.run_cell(f"%mlc_time MyModule_lib {FAST} -o", store_history=True).success
    tables = [o.data["text/html"] for o in out.outputs if "text/html" in o.data]
    assert len(tables) == 1 and "<svg" not in out.stdout  # the magic's table, once
    assert "<TimingReport: 1 variants, fastest MyModule_lib" in out.stdout  # the result, one line
    with capture_output() as kept:
        assert ch2.run_cell(f"r = %mlc_time MyModule_lib {FAST} -o", store_history=True).success
    assert len([o for o in kept.outputs if "text/html" in o.data]) == 1  # shown, though kept
    with capture_output() as later:
        assert ch2.run_cell("r", store_history=True).success  # a later cell: the whole table
    assert "median" in later.stdout and "TimingReport:" not in later.stdout
