"""Bench: whole models against PyTorch and the CPU runtimes — eager, ``torch.compile``, inductor
freezing, ONNX Runtime, OpenVINO, TVM as built, TVM default, TVM tuned.

Four models, batch 1, random weights (no torchvision here: the CNNs are written out):

* the MLC book's MLP, 784-128-10;
* ResNet-18, 3x224x224;
* MobileNet v1 (depthwise-separable convolutions), 3x224x224;
* ``nn.TransformerEncoderLayer`` (d_model 256, 4 heads, sequence 128, batch first).

For each: import (``torch.export``), build as ``tvm.compile`` builds it (TVM's loops, ``--schedule
none``; ``--no-as-built`` leaves it out) and with the default schedules, ``torch.compile`` it (its
compile time is reported), tune it with ``%mlc_tune``'s driver (the MLP with a trial budget, the
others with a time budget; the tuning wall time is reported), then time every row *in turns* (one
sample of each per round, median of ``--rounds``, 0.5 s between libraries), each row checked
against PyTorch first. The runtimes people deploy with on a CPU race too (``%mlc_time
--runtimes``'s rows, from the ``bench`` extra: ``pip install -e '.[bench]'``): ONNX Runtime with
every graph optimisation (the model from ``torch.onnx.export(..., dynamo=True)``), OpenVINO
(``openvino.convert_model``, f32, latency hint) and ``torch.compile`` with inductor freezing, all
on the machine's cores (PyTorch's threads are set to the same count); a runtime that is not
installed, or fails on a model, is a row that says why.

The targets of the issues this bench answers: the MLP tuned at least 5x faster than PyTorch eager;
ResNet-18's default build (no tuning) at least as fast as eager; the default build at least 1.1x
the best of ONNX Runtime, OpenVINO and inductor freezing on ResNet-18, MobileNet v1 and the encoder
layer; a 30-minute tune at least 1.3x that best on ResNet-18 and MobileNet, and 1.15x its own
default build. ``--tune none`` races the default builds only (minutes, not hours). The relations
are printed from the in-turn medians (not timed asserts), with the ratios no schedule of the
default build's kernels can pass: their arithmetic at this machine's fp32 peak against the best
runtime and the default build (a target above them needs fewer products). For every model it prints where the
default build's time goes and, when tuned, where the tuned build's goes: each kernel's GFLOP/s,
arithmetic intensity, whether it is memory- or compute-bound on this machine and its share of the
roof over it, so the kernels still far from what the machine allows stand out.

Run it alone on a quiet machine: other processes make 2-core parallel kernels (TVM's and
PyTorch's) wait for their time slices. The load average is printed before and after, and the
fork/join of TVM's thread pool and the hand-off between its threads before and after each model's
race (``bench_parallel_launch.py``): where the fork/join reads several times its low figure, the
host had the two cores far apart for that race, and the memory-bound kernels (MobileNet's
depthwise ones) ran up to twice as long; the hand-off's "from the other's" figure is what each
of them pays for reading what the other core wrote.

    .venv/bin/python bench/bench_models.py                       # MLP 256 trials, 30 min each other
    .venv/bin/python bench/bench_models.py --models mlp --mlp-trials 64     # a quick look
    .venv/bin/python bench/bench_models.py --tune none                      # default builds only
    .venv/bin/python bench/bench_models.py --model-time encoder=10m         # a shorter encoder tune
    .venv/bin/python bench/bench_models.py --models resnet18 mobilenet encoder --tune none \
        --no-as-built                                        # default builds against the runtimes
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TVM_NUM_THREADS", str(os.cpu_count() or 1))

MODELS = ("mlp", "resnet18", "mobilenet", "encoder")


def build_model(name: str):
    """The PyTorch model (eval mode, seeded random weights, as the tests build it) and its input."""
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from model_support import encoder_layer, mlp, mobilenet_v1, resnet18

    torch.manual_seed(0)
    if name == "mlp":
        return mlp(), torch.rand(1, 784)
    if name == "encoder":
        return encoder_layer(), torch.randn(1, 128, 256)
    if name == "mobilenet":
        return mobilenet_v1(), torch.randn(1, 3, 224, 224)
    return resnet18(), torch.randn(1, 3, 224, 224)


def bench_model(name: str, args: argparse.Namespace, work_root: str) -> dict:
    """Import, build both ways, tune, then race every row in turns; the figures of one model."""
    from mlc_jupyter.compilation import build_module
    from mlc_jupyter.measure import Sampling, profile_kernels, time_functions
    from mlc_jupyter.models import import_model
    from mlc_jupyter.tune import tune

    model, example = build_model(name)
    start = time.perf_counter()
    imported = import_model(model, example)
    import_s = time.perf_counter() - start
    start = time.perf_counter()
    default = build_module(imported)
    build_s = time.perf_counter() - start
    model_time = dict(spec.split("=", 1) for spec in args.model_time)
    budget = (
        {"trials": args.mlp_trials} if name == "mlp" else {"time": model_time.get(name, args.time)}
    )
    variants = {"eager": model, "tvm_default": default}
    if not args.no_as_built:
        variants["tvm_as_built"] = build_module(imported, schedule="none")
    tuned, tune_s = None, 0.0
    if args.tune != "none" and budget.get("time") != "none":
        print(f"{name}: tuning ({budget})", flush=True)
        start = time.perf_counter()
        tuned = tune(imported, work_dir=os.path.join(work_root, name), fresh=True, **budget)
        tune_s = time.perf_counter() - start
        variants["tvm_tuned"] = tuned
    profile = profile_kernels(default, runs=5, name=f"{name} (default build)")
    tuned_profile = (
        profile_kernels(tuned, runs=5, name=f"{name} (tuned build)") if tuned is not None else None
    )
    host_before = host_state()
    report = time_functions(
        variants,
        sampling=Sampling(repeat=args.rounds),
        torch_compile=not args.no_compile,
        runtimes=not args.no_runtimes,
    )
    host_after = host_state()
    return {
        "name": name,
        "import_s": import_s,
        "build_s": build_s,
        "tune_s": tune_s,
        "trials": tuned.n_records if tuned else 0,
        "tune_budget": budget if tuned else "none",
        "tuned": tuned,
        "report": report,
        "profile": profile,
        "tuned_profile": tuned_profile,
        "host_state": (host_before, host_after),
    }


def host_state() -> str:
    """Which state the host is in now: the fork/join of TVM's thread pool, and the time a
    parallel loop takes to read what the loop before it wrote, on the same core and on the
    other (``bench_parallel_launch.py``)."""
    from bench_parallel_launch import HALF, fork_join_s, handoff_s

    parallel, serial = fork_join_s()
    own, other = handoff_s()
    return (
        f"fork/join {(parallel - serial) * 1e6:.2f} us, hand-off of {HALF * 4 // 1024} KiB "
        f"per core {own * 1e6:.1f} us from its own writes, {other * 1e6:.1f} us from the other's"
    )


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:.3f} ms"


def print_model(res: dict) -> None:
    """One model's tables, printed as soon as it is done (a later model's failure keeps them)."""
    from mlc_jupyter.display.profile import profile_text
    from mlc_jupyter.display.timing import report_text
    from mlc_jupyter.display.tune import result_text

    print(f"\n=== {res['name']}: imported in {res['import_s']:.1f} s, default build "
          f"{res['build_s']:.1f} s, tuned {res['trials']} records in {res['tune_s']:.0f} s "
          f"({res['tune_budget']})")  # fmt: skip
    if res["tuned"] is not None:
        print(result_text(res["tuned"]))
    print(report_text(res["report"]))
    before, after = res["host_state"]
    print(f"the host before the race: {before}\nthe host after the race: {after}")
    print(profile_text(res["profile"]))
    if res["tuned_profile"] is not None:
        print(profile_text(res["tuned_profile"]))
    sys.stdout.flush()


#: The summary's rows other than TVM's: column title and the race's row name.
OTHERS = (
    ("OpenVINO", "openvino(eager)"),
    ("ONNX Runtime", "onnxruntime(eager)"),
    ("inductor freezing", "torch.compile+freezing(eager)"),
    ("torch.compile", "torch.compile(eager)"),
    ("eager", "eager"),
)
#: The runtimes a TVM build is measured against (the targets' "best runtime").
RUNTIMES = ("openvino(eager)", "onnxruntime(eager)", "torch.compile+freezing(eager)")


def _kept_default(res: dict) -> bool:
    """The tune kept the default build, so its row races the default build against itself."""
    return res["tuned"] is not None and res["tuned"].kept == "default build"


def _ratio(slow: float | None, fast: float | None) -> str:
    return f"{slow / fast:.2f}x" if slow and fast else "-"


def _at_peak(res: dict) -> tuple[float, float] | None:
    """The seconds the default build's arithmetic (a Winograd layer's products as it computes
    them) takes at this machine's fp32 peak, and that peak, where the peak bounds it: what no
    schedule of the same kernels beats, so a target above it needs fewer products."""
    report = res["report"]
    default = next((t for t in report.timings if t.name == "tvm_default"), None)
    peak = report.bounding_peak(default) if default else None
    work = (default.arithmetic_flops or default.flops) if default else None
    return (work / (peak * 1e9), peak) if peak and work else None


def _fastest_default(res: dict, raced: float) -> tuple[float, str]:
    """The default build's faster timing of this run, the race's median or its profile's whole
    model, and which: a slow spell of the host during the race would make the bound over the
    default build read looser than the build is."""
    profiled = res["profile"].total_s if res.get("profile") else None
    if profiled and profiled < raced:
        return profiled, "profile's whole-model time"
    return raced, "race's median"


def print_results(results: list[dict]) -> None:
    print("\nsummary (median of the in-turn samples; ratios: the other's time over TVM's)")
    head = (
        "model", *(title for title, _ in OTHERS), "TVM as built", "TVM default", "TVM tuned",
        "default vs best runtime", "tuned vs best runtime", "tuned vs default", "tuning",
    )  # fmt: skip
    rows = [head]
    for res in results:
        row = {t.name: t.median_s for t in res["report"].timings}
        best = min((row[n] for n in RUNTIMES if row.get(n)), default=None)
        default, tuned = row.get("tvm_default"), row.get("tvm_tuned")
        rows.append((
            res["name"], *(_ms(row.get(name)) for _, name in OTHERS),
            _ms(row.get("tvm_as_built")), _ms(default), _ms(tuned),
            _ratio(best, default), _ratio(best, tuned),
            _ratio(default, tuned) + (" (same build)" if _kept_default(res) else ""),
            f"{res['tune_s'] / 60:.1f} min" if tuned else "-",
        ))  # fmt: skip
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    for r in rows:
        print(
            "  ".join(
                c.rjust(w) if i else c.ljust(w)
                for i, (c, w) in enumerate(zip(r, widths, strict=True))
            )
        )
    print("\nrelations (from the in-turn medians above; not timed asserts)")
    for res in results:
        row = {t.name: t.median_s for t in res["report"].timings}
        eager, default, tuned = row.get("eager"), row.get("tvm_default"), row.get("tvm_tuned")
        timed = [(row[n], n) for n in RUNTIMES if row.get(n)]
        if eager and default:
            print(f"{res['name']}: default build at least as fast as eager: "
                  f"{'yes' if default <= eager else 'no'} ({eager / default:.2f}x eager)")  # fmt: skip
        if timed and default:
            best, which = min(timed)
            print(f"{res['name']}: default build at least 1.1x the best runtime ({which}): "
                  f"{'yes' if best / default >= 1.1 else 'no'} ({best / default:.2f}x)")  # fmt: skip
        if timed and tuned:
            best, which = min(timed)
            print(f"{res['name']}: tuned build at least 1.3x the best runtime ({which}): "
                  f"{'yes' if best / tuned >= 1.3 else 'no'} ({best / tuned:.2f}x); at least "
                  f"1.15x its default: {'yes' if default / tuned >= 1.15 else 'no'} "
                  f"({default / tuned:.2f}x)")  # fmt: skip
            if _kept_default(res):
                print(f"{res['name']}: the tuner kept the default build (its tuned model timed "
                      "slower), so 'TVM tuned' is the default build timed again: the two rows "
                      "differ by the host's noise, not by tuning")  # fmt: skip
        floor = _at_peak(res)
        if floor and default:
            seconds, peak = floor
            best = min(timed)[0] if timed else None
            than_best = f"{best / seconds:.2f}x the best runtime or " if best else ""
            fastest, where = _fastest_default(res, default)
            print(f"{res['name']}: at the fp32 peak ({peak:.0f} GFLOP/s) the default build's "
                  f"arithmetic takes {_ms(seconds)}: no schedule of its kernels passes "
                  f"{than_best}{fastest / seconds:.2f}x the default build (its {where}, "
                  f"{_ms(fastest)})")  # fmt: skip
    for res in results:
        for t in res["report"].timings:
            if t.error:
                print(f"{res['name']} {t.name}: {t.error}")
        for warning in res["report"].warnings:
            print(f"{res['name']} warning: {warning}")


def _versions() -> str:
    """The versions raced (the runtimes' when installed)."""
    from importlib.metadata import PackageNotFoundError, version

    found = []
    for package in ("apache-tvm", "torch", "onnxruntime", "openvino", "onnxscript"):
        try:
            found.append(f"{package} {version(package)}")
        except PackageNotFoundError:
            found.append(f"{package} not installed")
    return "versions: " + ", ".join(found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument("--mlp-trials", type=int, default=256, help="the MLP's tuning trials")
    parser.add_argument("--time", default="30m", help="tuning time of each model but the MLP")
    parser.add_argument(
        "--model-time", action="append", default=[], metavar="MODEL=TIME",
        help="one model's tuning time instead of --time, e.g. encoder=10m, or encoder=none for its "
        "default build only (repeatable)",
    )  # fmt: skip
    parser.add_argument(
        "--tune", choices=("all", "none"), default="all", help="none: race the default builds only"
    )
    parser.add_argument("--rounds", type=int, default=11, help="in-turn timing rounds")
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    parser.add_argument(
        "--no-runtimes", action="store_true", help="skip ONNX Runtime, OpenVINO, inductor freezing"
    )
    parser.add_argument(
        "--no-as-built", action="store_true", help="skip the build without default schedules"
    )
    args = parser.parse_args()
    import torch

    torch.set_num_threads(int(os.environ["TVM_NUM_THREADS"]))  # every row on the same cores
    print(f"load average before: {os.getloadavg()}; {os.cpu_count()} CPUs; threads: "
          f"TVM, ONNX Runtime, OpenVINO and PyTorch {os.environ['TVM_NUM_THREADS']} each")  # fmt: skip
    print(_versions())
    with tempfile.TemporaryDirectory(prefix="bench-models-") as work_root:
        results = []
        for name in args.models:
            results.append(bench_model(name, args, work_root))
            print_model(results[-1])
    print_results(results)
    print(f"\nload average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
