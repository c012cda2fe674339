"""time_module / time_functions: checked before timed, same inputs for every variant, GFLOP/s."""

from __future__ import annotations

import numpy as np
import pytest
from build_support import COURSE_TARGET, RELAX_ADD, mm_relu, parse, transform, vector_add_gpu

from mlc_jupyter.compilation import build_module, gpu_present
from mlc_jupyter.errors import NoGPUError, TimingError
from mlc_jupyter.measure import Sampling, report_for, time_functions, time_module
from mlc_jupyter.measure.compare import uncertain_ranking
from mlc_jupyter.measure.timer import Timing

FAST = {"sampling": Sampling(repeat=3, min_repeat_ms=5)}
MM_FLOPS = 2 * 128**3 + 128 * 128  # multiply-add per k, plus the relu's max


def test_one_function_is_checked_against_a_numpy_expression_and_timed():
    t = time_module(mm_relu(), COURSE_TARGET, ref="np.maximum(A @ B, 0)", **FAST)
    assert t.correct is True and t.error is None
    assert t.runs == 3 and t.min_s <= t.median_s
    assert t.flops == pytest.approx(MM_FLOPS, rel=0.01)
    assert t.gflops == pytest.approx(t.flops / t.median_s / 1e9)
    assert "num-cores=2" in t.target


def test_a_wrong_result_is_reported_instead_of_a_time():
    t = time_module(mm_relu(), COURSE_TARGET, ref="A @ B + 1", **FAST)
    assert t.correct is False and t.median_s is None
    assert "output C differs from the reference (max abs error" in t.error


def test_a_callable_and_another_module_serve_as_references():
    assert time_module(mm_relu(), ref=lambda a, b: np.maximum(a @ b, 0), **FAST).correct
    assert time_module(transform(mm_relu(), 8), ref=mm_relu(), **FAST).correct


def test_without_a_reference_correctness_is_unknown():
    assert time_module(mm_relu(), **FAST).correct is None


def test_given_arguments_are_used_as_the_inputs():
    a = np.zeros((128, 128), "float32")
    t = time_module(mm_relu(), args=(a, a), ref=lambda x, y: np.zeros((128, 128)), **FAST)
    assert t.correct


def test_a_reference_that_fails_says_so():
    with pytest.raises(TimingError, match="the reference failed: NameError"):
        time_module(mm_relu(), ref="np.maximum(A @ Q, 0)", **FAST)


def test_a_reference_that_does_not_parse_says_so():
    with pytest.raises(TimingError, match="cannot read --ref"):
        time_module(mm_relu(), ref="np.maximum(A @", **FAST)


def test_a_relax_module_is_timed_through_the_vm():
    t = time_module(parse(RELAX_ADD, "relax"), ref="x + 2 * y", **FAST)
    assert t.correct and t.median_s > 0


def test_the_book_chapter_2_variants_side_by_side_with_numpy_and_torch():
    report = time_functions(
        {"naive": mm_relu(), "jfactor8": transform(mm_relu(), 8)},
        COURSE_TARGET,
        ref="np.maximum(A @ B, 0)",
        **FAST,
    )
    assert report.names == ["naive", "jfactor8", "numpy", "torch"]
    assert all(t.correct for t in report.timings)
    assert report["naive"].speedup == pytest.approx(1.0)
    naive, j8 = report["naive"], report["jfactor8"]
    assert j8.speedup == pytest.approx(naive.median_s / j8.median_s)  # against the first variant
    assert report["numpy"].kind == "numpy" and report["numpy"].gflops > 0


def test_fp32_cpu_variants_are_placed_against_this_machines_peak_and_roofline():
    from mlc_jupyter.display.timing import report_html, report_text
    from mlc_jupyter.measure.machine import machine_limits

    report = time_functions({"naive": mm_relu()}, COURSE_TARGET, ref="np.maximum(A @ B, 0)", **FAST)
    limits = machine_limits()
    assert report.limits == limits
    naive = report["naive"]
    assert naive.bytes == 3 * 128 * 128 * 4 and naive.intensity == pytest.approx(
        naive.flops / naive.bytes
    )
    assert report.peak_fraction(naive) == pytest.approx(naive.gflops / limits.peak(report.cores))
    assert report["numpy"].intensity == naive.intensity  # the baselines do the same work
    text = report_text(report)
    assert "% peak" in text.splitlines()[0] and "roofline: fp32 peak" in text
    assert 'aria-label="roofline chart"' in report_html(report)


def test_variants_are_compared_with_the_first_when_there_is_no_reference():
    report = time_functions({"naive": mm_relu(), "j8": transform(mm_relu(), 8)}, **FAST)
    assert report["j8"].correct is True and report.names == ["naive", "j8"]


def test_a_built_function_names_its_variant():
    lib = build_module(mm_relu(), COURSE_TARGET)
    t = time_functions({"lib.mm_relu": lib.mm_relu}, **FAST).timings[0]
    assert t.name == "lib.mm_relu" and t.median_s > 0


def test_a_large_spread_warns_only_when_it_makes_the_ranking_uncertain():
    noisy = Timing("noisy", 1.0, 1.5, 0.9, 0.5, 3, results_s=(0.5, 1.0, 3.0))
    assert report_for(noisy).warnings == ()  # alone: the table's ± says it
    close = Timing("close", 1.2, 1.2, 0.05, 1.1, 3, results_s=(1.1, 1.2, 1.3))
    far = Timing("far", 9.0, 9.0, 0.1, 8.9, 3, results_s=(8.9, 9.0, 9.1))
    warnings = uncertain_ranking([noisy, close, far])
    assert warnings == [
        "too close to call: noisy and close (±90%, ±4%) differ by less than their runs vary, so "
        "which is faster, and the speed-up between them, may change on another run (more "
        "--repeat, or a quieter machine, settles it)"
    ]


def test_close_slow_variants_are_no_warning_and_several_doubts_are_one_line():
    first = Timing("first", 1.0, 1.0, 0.05, 0.95, 3, results_s=(0.95, 1.0, 1.05))
    # two slow rows close to each other: no conclusion of the table rests on their order
    slow_a = Timing("slow_a", 5.0, 5.0, 2.0, 3.0, 3, results_s=(3.0, 5.0, 7.0))
    slow_b = Timing("slow_b", 5.5, 5.5, 2.0, 3.5, 3, results_s=(3.5, 5.5, 7.5))
    assert uncertain_ranking([first, slow_a, slow_b]) == []
    # the first row and two others within its noise: one line names both pairs
    noisy = Timing("noisy", 1.0, 1.0, 0.4, 0.6, 3, results_s=(0.6, 1.0, 1.4))
    near = Timing("near", 1.1, 1.1, 0.1, 1.0, 3, results_s=(1.0, 1.1, 1.2))
    nearer = Timing("nearer", 0.95, 0.95, 0.1, 0.9, 3, results_s=(0.9, 0.95, 1.0))
    (line,) = uncertain_ranking([noisy, near, nearer])
    assert "nearer and noisy" in line and "noisy and near" in line


@pytest.mark.skipif(gpu_present("cuda"), reason="a GPU is present")
def test_timing_a_cuda_build_without_a_gpu_says_no_gpu_is_present():
    with pytest.raises(NoGPUError, match="no GPU is present"):
        time_module(vector_add_gpu(), "cuda")


MIXTURE = """
@tvm.script.ir_module
class Mixture:
    @T.prim_func
    def double(X: T.Buffer((4,), "float32"), Y: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("Y"):
                vi = T.axis.remap("S", [i])
                Y[vi] = X[vi] * T.float32(2)

    @R.function
    def main(x: R.Tensor((4,), "float32")):
        with R.dataflow():
            a = R.call_tir(Mixture.double, (x,), R.Tensor((4,), dtype="float32"))
            b = R.call_dps_packed("env.relu", (a,), R.Tensor((4,), dtype="float32"))
            R.output(b)
        return b
"""


def test_a_models_flops_are_its_kernels_unless_it_calls_outside_functions():
    from mlc_jupyter import parse_relax
    from mlc_jupyter.measure.timer import model_flops

    mixture = parse_relax(MIXTURE)
    assert model_flops(mixture) is None  # env.relu's work cannot be counted: no GFLOP/s
    only_tir = parse_relax(
        MIXTURE.replace('R.call_dps_packed("env.relu"', "R.call_tir(Mixture.double")
    )
    assert model_flops(only_tir) == 2 * model_flops(parse_relax(MIXTURE.replace(
        '            b = R.call_dps_packed("env.relu", (a,), R.Tensor((4,), dtype="float32"))\n',
        "            b = a\n")))  # fmt: skip
