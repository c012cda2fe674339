"""Tuning progress and results as text and HTML (results made here, no TVM)."""

from __future__ import annotations

import dataclasses
import re

from text_support import unwrapped

from mlc_jupyter.display.tune import progress_bundle, progress_text, result_bundle, result_text
from mlc_jupyter.tune.report import TuneProgress, TuneResult

EVENT = TuneProgress(
    task="main", trials_done=16, trials_total=64, best_latency_s=1.5e-3, best_gflops=12.5,
    elapsed_s=75.0, eta_s=225.0, curve=((8, 3e-3), (16, 1.5e-3)), build_errors=1,
    first_error="build: out of registers", resumed_from=8, log_path="/work/dir/logs/tune.log",
)  # fmt: skip


def test_a_progress_line_says_trials_best_elapsed_and_what_is_left():
    line = progress_text(EVENT)
    assert line.startswith(
        "[main] 16/64 trials (8 new, 8 earlier: the default schedule, past runs), best "
        "candidate 1.500 ms (12.5 GFLOP/s)"
    )
    assert "elapsed 1m15s" in line and "left ~3m45s" in line
    assert "failed: 1 build / 0 run" in line


def test_the_progress_block_has_a_bar_a_curve_the_first_error_and_the_log():
    html = progress_bundle(EVENT)["text/html"]
    assert "width: 25%" in html and "<svg" in html
    assert "first error: build: out of registers" in html and "/work/dir/logs/tune.log" in html


def test_a_result_summary_reads_latencies_speed_up_and_where_the_records_are():
    result = TuneResult(
        workload=None, mod=None, trace=None, best_latency_s=1e-3, baseline_latency_s=4e-3,
        target=None, work_dir="/work/dir", n_records=64, trials_new=56, resumed_from=8,
        flop=2 * 128**3, interrupted=True, rpc="127.0.0.1:9190:local",
    )  # fmt: skip
    text = unwrapped(result_text(result))
    assert text.splitlines()[0] == "TuneResult (tir, 64 trials, interrupted)"
    assert "speed-up 4.00x" in text and "trials   64 (56 new, 8 earlier)" in text
    assert "work dir /work/dir" in text and "measured on RPC devices 127.0.0.1:9190:local" in text
    bundle = result_bundle(result)
    assert bundle["text/plain"] == text and "TuneResult" in bundle["text/html"]


def test_a_time_budgeted_progress_line_gives_the_share_of_peak_and_the_time_left():
    event = dataclasses.replace(
        EVENT, trials_total=None, time_budget_s=600.0, eta_s=525.0, peak_fraction=0.42
    )
    line = progress_text(event)
    assert line.startswith(
        "[main] 16 trials (8 new, 8 earlier: the default schedule, past runs), best candidate "
        "1.500 ms (12.5 GFLOP/s, 42% of peak)"
    )
    assert "elapsed 1m15s of 10m00s" in line and "left at most 8m45s" in line
    assert "width: 12%" in progress_bundle(event)["text/html"]  # the bar follows the time


def test_a_result_says_why_it_stopped_its_space_and_its_share_of_peak():
    result = TuneResult(
        workload=None, mod=None, trace=None, best_latency_s=1e-3, baseline_latency_s=4e-3,
        target=None, work_dir="/work/dir", n_records=300, trials_new=300, flop=2 * 128**3,
        stop_reason="converged", spaces={"main": "matmul"}, peak_gflops=10.0, elapsed_s=200.0,
    )  # fmt: skip
    text = unwrapped(result_text(result))
    assert text.splitlines()[0] == "TuneResult (tir, 300 trials, search converged)"
    assert "(4.2 GFLOP/s, 42% of peak)" in text and "space    matmul" in text
    assert "trials   300 new in 3m20s" in text


def test_the_curve_has_labelled_axes_and_the_peak_line():
    event = dataclasses.replace(EVENT, peak_fraction=0.25)
    svg = progress_bundle(event)["text/html"]
    assert "trials measured</text>" in svg and "best candidate</text>" in svg
    assert ">64</text>" in svg  # the x axis ends at the trials asked for
    assert "peak 375.0 us</text>" in svg  # the latency at the machine's peak: 1.5 ms x 25 %
    again = progress_bundle(event, {"main": event.curve, "re-timing": ()})["text/html"]
    assert "peak 375.0 us</text>" in again  # a task without a curve is no second curve
    assert again.count("<polyline") == 1


def test_a_gpu_tune_says_which_compiler_built_its_candidates():
    nvrtc = dataclasses.replace(EVENT, compiler="nvrtc")
    assert "compiled with NVRTC (in-process)" in progress_text(nvrtc)
    assert "compiled with nvcc" in progress_text(dataclasses.replace(EVENT, compiler="nvcc"))
    assert "compiled with" not in progress_text(EVENT)  # a CPU tune
    result = TuneResult(
        workload=None, mod=None, trace=None, best_latency_s=1e-5, baseline_latency_s=None,
        target=None, work_dir="/work/dir", n_records=64, compiler="nvcc",
    )  # fmt: skip
    assert "  compiler nvcc" in unwrapped(result_text(result)).splitlines()


def test_a_whole_model_table_shows_where_the_time_went_and_which_kernels_shared_a_tuning():
    from mlc_jupyter.tune import ModelTask

    rows = (
        ModelTask("conv_a", 2, 0.6, 40, 2e-3, 1e-3, "tuned", seconds=90.0, new=24, reused=16,
                  shared_with=("conv_b",)),
        ModelTask("conv_b", 1, 0.3, 40, 2e-3, 1e-3, "tuned", shared_with=("conv_a",)),
        ModelTask("pool", 1, 0.1, 0, None, None, "default"),
    )  # fmt: skip
    result = TuneResult(
        workload=None, mod=None, trace=None, best_latency_s=3e-3, baseline_latency_s=5e-3,
        target=None, work_dir="/work/model", n_records=40, trials_new=24, resumed_from=16,
        kind="model", model_tasks=rows, time_budget_s=120.0,
        phases={"plan": 5.0, "tasks": 90.0, "final": 10.0},
    )  # fmt: skip
    text = unwrapped(result_text(result))
    assert "time     plan 5s, tasks 1m30s, final 10s of 2m" in text
    head, lead, other, pool = (line.split() for line in text.splitlines()[-4:])
    # the key columns first: a narrow output shows them before it scrolls
    assert head[:5] == ["kernel", "share", "default", "tuned", "kept"]
    assert head[6:10] == ["time", "trials", "new", "reused"]
    assert lead[:5] == ["conv_a", "60.0%", "2.000", "ms", "1.000"]
    assert lead[-6:-1] == ["2", "1m30s", "40", "24", "16"]
    assert lead[-1] == "conv_b" and other[-1] == "conv_a" and other[-5] == "-"
    assert pool[4] == "default" and pool[-1] == "-"


def _ticks(svg: str) -> dict[str, float]:
    """A curve's y tick labels and their heights."""
    return {
        m[2]: float(m[1])
        for m in re.finditer(r'y="([\d.]+)"[^>]*class="mlc-tick"[^>]*>([^<]*)<', svg)
    }


def _polyline_ys(svg: str) -> list[float]:
    coords = re.search(r'<polyline[^>]*points="([^"]*)"', svg).group(1).split()
    return [float(c.split(",")[1]) for c in coords]


def test_a_small_kernels_curve_has_readable_ticks_and_one_slow_candidate_does_not_flatten_it():
    # the first candidate 40 us, the rest near the 4.8 us default; peak far below
    curve = ((1, 40e-6), (8, 4.9e-6), (16, 4.8e-6), (24, 4.7e-6), (32, 4.6e-6))
    event = dataclasses.replace(
        EVENT, curve=curve, best_latency_s=4.6e-6, peak_fraction=0.1, trials_total=32
    )
    svg = progress_bundle(event)["text/html"]
    ticks = _ticks(svg)
    assert len(ticks) >= 2 and all(
        re.fullmatch(r"[1-9][\d.]* us|0\.0*[1-9]\d* us", t) for t in ticks
    )
    assert not any(t.startswith("0.0 ") for t in ticks)
    ys = _polyline_ys(svg)
    # after the outlier the curve spans a visible part of the plot, not a flat line at its foot
    after = ys[2:]
    assert max(after) - min(after) >= 5
    assert "↑ 40.0 us" in svg  # the cut candidate is said at the top edge
    assert "peak 0.46 us, below the axis" in svg  # its label in the key, not on the data


def test_a_five_percent_gain_is_a_small_step_not_the_whole_axis():
    curve = ((8, 4.4e-6), (16, 4.3e-6), (32, 4.2e-6))
    svg = progress_bundle(dataclasses.replace(EVENT, curve=curve))["text/html"]
    ys = _polyline_ys(svg)
    assert max(ys) - min(ys) < 0.3 * 110  # 110 px: the plot's height


def test_the_result_curve_shows_the_kernel_before_tuning_and_says_which_timing_is_which():
    result = TuneResult(
        workload=None, mod=None, trace=None, best_latency_s=8.0e-6, baseline_latency_s=101.5e-6,
        target=None, work_dir="/work/dir", n_records=32, trials_new=32, flop=2 * 784 * 128,
        curves={"linear0": ((8, 9.7e-6), (16, 8.3e-6), (32, 8.1e-6))},
    )  # fmt: skip
    text = unwrapped(result_text(result))
    assert "tuned    8.00 us" in text and "timed as %mlc_time times it" in text
    assert "search   best candidate 8.10 us as the tuner's runs timed it" in text
    svg = result_bundle(result)["text/html"]
    assert 'data-ref="untuned"' in svg and "untuned 101.5 us" in svg


def _timing(median: float, std: float):
    from mlc_jupyter.measure.timer import Timing

    runs = (median - std, median, median + std)
    return Timing("t", median, median, std, median - std, 3, results_s=runs)


def test_a_speed_up_inside_the_runs_spread_reads_no_measurable_change():
    result = TuneResult(
        workload=None, mod=None, trace=None, best_latency_s=20.996e-3,
        baseline_latency_s=18.950e-3, target=None, work_dir="/w", n_records=16, kind="model",
        timing=_timing(20.996e-3, 2.5e-3), baseline_timing=_timing(18.950e-3, 1.5e-3),
    )  # fmt: skip
    text = unwrapped(result_text(result))
    assert "speed-up no measurable change (0.90x is within how much the runs vary)" in text
    assert "tuned    20.996 ms ±12%, the whole model timed in turns with the default build" in text
    assert "default  18.950 ms ±8%" in text
    clear = dataclasses.replace(result, timing=_timing(10e-3, 0.2e-3), best_latency_s=10e-3)
    assert "speed-up 1.90x" in unwrapped(result_text(clear))


def test_a_model_whose_tuned_build_timed_slower_keeps_the_default_and_says_so():
    default = _timing(18.950e-3, 0.2e-3)
    note = "kept the default build: the tuned model timed slower (20.996 ms ±1% against ..."
    result = TuneResult(
        workload=None, mod=None, trace=None, best_latency_s=18.950e-3,
        baseline_latency_s=18.950e-3, target=None, work_dir="/w", n_records=16, kind="model",
        timing=default, baseline_timing=default, kept="default build", notes=(note,),
    )  # fmt: skip
    text = unwrapped(result_text(result))
    assert "kept     the default build, 18.950 ms ±1%: the tuned model timed slower" in text
    assert "speed-up none: the default build is kept" in text and note in text
    assert not re.search(r"tuned\s+[\d.]+ (us|ms)", text)  # no tuned latency reads as the result


def _model_timing(median: float, flops: float, arithmetic: float | None = None):
    from mlc_jupyter.measure.timer import Timing

    runs = (median * 0.99, median, median * 1.01)
    return Timing(
        "t", median, median, median * 0.01, median * 0.99, 3, results_s=runs,
        gflops=flops / median / 1e9, flops=flops, arithmetic_flops=arithmetic,
    )  # fmt: skip


def test_a_model_result_says_how_much_of_the_peak_its_default_build_leaves_to_a_tune():
    # a MobileNet-like default near the peak: a tune has little left to find, and says so
    near = TuneResult(
        workload=None, mod=None, trace=None, best_latency_s=5.9e-3, baseline_latency_s=6e-3,
        target="llvm", work_dir="/w", n_records=8, kind="model", peak_gflops=230.0,
        timing=_model_timing(5.9e-3, 1.2e9), baseline_timing=_model_timing(6e-3, 1.2e9),
    )  # fmt: skip
    assert (
        "  peak     the default build runs at 87% of this machine's fp32 peak (230 GFLOP/s, on the "
        "products its kernels compute), the tuned one at 88%: at the peak, the default build "
        "would run 1.15x faster" in unwrapped(result_text(near))
    )
    # Winograd layers compute fewer products than the convolution as written: the share is of
    # those products, never above the peak on FLOPs the kernels do not compute
    winograd = dataclasses.replace(
        near, kept="default build", baseline_timing=_model_timing(12e-3, 3.6e9, 2.2e9)
    )
    text = unwrapped(result_text(winograd))
    assert "the default build runs at 80% of this machine's fp32 peak" in text
    assert "the tuned one" not in text  # the default build is the result
    # no peak known (another device, other data, an RPC server): no line
    assert "  peak " not in unwrapped(result_text(dataclasses.replace(near, peak_gflops=None)))


def test_a_model_result_says_how_its_kernels_were_timed():
    from mlc_jupyter.tune import ModelTask

    result = TuneResult(
        workload=None, mod=None, trace=None, best_latency_s=1e-3, baseline_latency_s=2e-3,
        target=None, work_dir="/w", n_records=8, kind="model",
        model_tasks=(ModelTask("k", 1, 1.0, 8, 2e-3, 1e-3, "tuned", seconds=3.0, new=8),),
    )  # fmt: skip
    assert "kernels  default and tuned: each kernel per call, timed in turns" in unwrapped(
        result_text(result)
    )


def test_a_model_result_wraps_its_long_lines_under_their_labels_and_keeps_its_table():
    # the peak line and the kernels line ran past a 1400 px output and scrolled with it
    from mlc_jupyter.display.tune import TEXT_WIDTH
    from mlc_jupyter.tune import ModelTask

    long_name = "fused_conv2d_add_relu_" + "x" * 100  # a table row is not wrapped
    result = TuneResult(
        workload=None, mod=None, trace=None, best_latency_s=5.9e-3, baseline_latency_s=6e-3,
        target="llvm", work_dir="/w", n_records=8, kind="model", peak_gflops=230.0,
        timing=_model_timing(5.9e-3, 1.2e9), baseline_timing=_model_timing(6e-3, 1.2e9),
        model_tasks=(ModelTask(long_name, 1, 1.0, 8, 2e-3, 1e-3, "tuned", seconds=3.0, new=8),),
        notes=("a note long enough to be wrapped, " * 5,),
    )  # fmt: skip
    lines = result_text(result).splitlines()
    table = [line for line in lines if long_name in line or line.startswith("  kernel ")]
    assert len(table) == 2 and all(len(line) > TEXT_WIDTH for line in table)  # its columns kept
    assert all(len(line) <= TEXT_WIDTH for line in lines if line not in table)
    peak = next(i for i, line in enumerate(lines) if line.startswith("  peak     "))
    assert lines[peak + 1].startswith(" " * 11) and lines[peak + 1][11] != " "  # under its text
    note = next(i for i, line in enumerate(lines) if line.startswith("  note: "))
    assert lines[note + 1].startswith(" " * 8) and lines[note + 1][8] != " "
    # in HTML each labelled line wraps at the output's width under its text; the table scrolls
    page = result_bundle(result)["text/html"]
    assert 'padding-left: 11ch; text-indent: -11ch">  peak     the default build runs' in page
    assert 'padding-left: 8ch; text-indent: -8ch">  note: a note long' in page
    assert long_name in re.search(r"<pre[^>]*>(.*?)</pre>", page, re.S).group(1)
