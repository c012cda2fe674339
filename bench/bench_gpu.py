"""Bench: the CUDA half on one GPU, in one run.

Tuned matmuls beside cuBLAS, the tuner's pace against raw MetaSchedule, and whole models beside
PyTorch eager and ``torch.compile``.

Prints three tables:

* **matmul** (512/1024/2048, fp32 and fp16 inputs with fp32 accumulation): ``%mlc_tune``'s
  result with its default budget, timed the way ``%mlc_time`` times it, beside cuBLAS through
  PyTorch in fp32 (TF32 off), TF32 and fp16 (CUDA events, median of 7 samples), as µs and TFLOP/s,
  and the tuned kernel as a fraction of cuBLAS at its own precision;
* **pace**: measured candidates per minute of ``%mlc_tune`` against raw ``ms.tune_tir`` at equal
  trials (``--pace-trials``, 512^3 fp32), wall time and best latency of each;
* **models** (batch 1: ResNet-18 224^2, ``TransformerEncoderLayer(256, 4)`` on 128 tokens): the
  default (dlight) build, the model tuned kernel by kernel (``--model-time``), PyTorch eager and
  ``torch.compile``, all on the GPU and raced in turns by ``%mlc_time``'s service.

It needs a CUDA GPU and a CUDA PyTorch; without them it says so and exits. One run takes long
(every tune has its default budget): ``--sizes``, ``--dtypes``, ``--no-pace`` and ``--no-models``
narrow it.

    .venv/bin/python bench/bench_gpu.py
    .venv/bin/python bench/bench_gpu.py --sizes 1024 --dtypes float32 --no-models
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

#: Samples per cuBLAS figure (CUDA events around a calibrated loop); the median counts.
SAMPLES = 7
#: Least seconds one sample lasts.
SAMPLE_S = 0.05


def require_gpu() -> None:
    """Exit with a clear message unless a CUDA GPU and a CUDA PyTorch are here."""
    from mlc_jupyter.compilation import gpu_present

    if not gpu_present("cuda"):
        sys.exit("bench_gpu.py needs a CUDA GPU: TVM finds none on this machine (nothing was run)")
    import torch

    if not torch.cuda.is_available():
        sys.exit(
            f"bench_gpu.py needs a CUDA build of PyTorch for the cuBLAS and model rows: torch "
            f"{torch.__version__} sees no GPU (nothing was run)"
        )


def matmul(n: int, dtype: str):
    """An n^3 matmul PrimFunc: ``dtype`` inputs, fp32 output (fp16 products summed in fp32)."""
    from tvm import te

    a = te.placeholder((n, n), dtype, name="A")
    b = te.placeholder((n, n), dtype, name="B")
    k = te.reduce_axis((0, n), name="k")
    c = te.compute(
        (n, n),
        lambda i, j: te.sum(a[i, k].astype("float32") * b[k, j].astype("float32"), axis=k),
        name="C",
    )
    return te.create_prim_func([a, b, c])


def cuda_median_s(fn, args) -> float:
    """Seconds per call of ``fn(*args)`` on the GPU: CUDA events, median of :data:`SAMPLES`."""
    from mlc_jupyter.measure.race import callable_contender

    sampler, _ = callable_contender("", fn, args, "torch", device="cuda:0").calibrate(SAMPLE_S)
    return statistics.median(sampler() for _ in range(SAMPLES))


def cublas_row(n: int) -> dict[str, float]:
    """cuBLAS through PyTorch at n^3: fp32 (TF32 off), TF32 and fp16, seconds per call."""
    import torch

    gen = torch.Generator(device="cuda").manual_seed(0)
    a = torch.rand(n, n, device="cuda", generator=gen)
    b = torch.rand(n, n, device="cuda", generator=gen)
    times = {}
    for name, allow in (("fp32", False), ("tf32", True)):
        torch.backends.cuda.matmul.allow_tf32 = allow
        times[name] = cuda_median_s(torch.matmul, [a, b])
    torch.backends.cuda.matmul.allow_tf32 = False
    times["fp16"] = cuda_median_s(torch.matmul, [a.half(), b.half()])
    return times


def tuned_matmul(n: int, dtype: str, budget: str | None) -> dict:
    """``%mlc_tune`` with its default budget (or ``budget``), then timed as ``%mlc_time`` does."""
    from mlc_jupyter.measure import time_module
    from mlc_jupyter.tune import tune

    start = time.perf_counter()
    work = tempfile.mkdtemp(prefix=f"bench-gpu-{n}-{dtype}-")
    result = tune(matmul(n, dtype), "cuda", time=budget, work_dir=work, seed=0)
    wall = time.perf_counter() - start
    timed = time_module(result)  # built for the target it was tuned for
    return {"result": result, "wall_s": wall, "median_s": timed.median_s}


def tflops(n: int, seconds: float | None) -> str:
    return f"{2 * n**3 / seconds / 1e12:7.1f}" if seconds else "      -"


def us(seconds: float | None) -> str:
    return f"{seconds * 1e6:9.1f}" if seconds else "        -"


def matmul_table(sizes: list[int], dtypes: list[str], budget: str | None) -> None:
    spent = f"a budget of {budget}" if budget else "the default budget"
    print(f"\nmatmul on the GPU (µs per call, TFLOP/s; tuned with {spent})")
    print(f"{'size':>5} {'dtype':8} {'tuned':>9} {'TF/s':>7} {'records':>8} {'stop':>9} "
          f"{'cuBLAS fp32':>11} {'TF32':>9} {'fp16':>9} {'vs cuBLAS':>9}")  # fmt: skip
    for n in sizes:
        cublas = cublas_row(n)
        for dtype in dtypes:
            run = tuned_matmul(n, dtype, budget)
            result, tuned = run["result"], run["median_s"]
            same = cublas["fp16" if dtype == "float16" else "fp32"]
            ratio = f"{same / tuned:8.2f}x" if tuned else "        -"
            print(f"{n:>5} {dtype:8} {us(tuned)} {tflops(n, tuned)} {result.n_records:>8} "
                  f"{result.stop_reason:>9} {us(cublas['fp32']):>11} {us(cublas['tf32'])} "
                  f"{us(cublas['fp16'])} {ratio}", flush=True)  # fmt: skip


def raw_tune_tir(func, trials: int) -> dict:
    """Raw ``ms.tune_tir`` on the GPU: MetaSchedule's default space, builder and runner."""
    from mlc_jupyter.tune.options import tuning_target
    from mlc_jupyter.tvm_compat import metaschedule

    ms = metaschedule()
    target = tuning_target("cuda")
    work = tempfile.mkdtemp(prefix="bench-gpu-raw-")
    start = time.perf_counter()
    with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):  # its tables
        database = ms.tune_tir(func, target, work, trials, num_trials_per_iter=64, seed=0)
    wall = time.perf_counter() - start
    records = database.get_all_tuning_records()
    latencies = [
        statistics.fmean(float(s) for s in r.run_secs) for r in records if r.run_secs
    ]  # fmt: skip
    return {"records": len(records), "wall_s": wall, "best_s": min(latencies, default=None)}


def pace_table(trials: int) -> None:
    from mlc_jupyter.tune import tune

    print(f"\ntuning pace at equal trials ({trials}, 512^3 fp32)")
    print(f"{'':22} {'records':>8} {'wall s':>8} {'records/min':>12} {'best µs':>9}")
    start = time.perf_counter()
    ours = tune(matmul(512, "float32"), "cuda", trials=trials,
                work_dir=tempfile.mkdtemp(prefix="bench-gpu-pace-"), seed=0)  # fmt: skip
    ours_wall = time.perf_counter() - start
    raw = raw_tune_tir(matmul(512, "float32"), trials)
    for name, records, wall, best in (
        ("%mlc_tune", ours.n_records, ours_wall, ours.best_latency_s),
        ("raw ms.tune_tir", raw["records"], raw["wall_s"], raw["best_s"]),
    ):
        print(f"{name:22} {records:>8} {wall:>8.0f} {records / wall * 60:>12.1f} {us(best)}")


def model_rows(name: str, model, shape: tuple[int, ...], budget: str | None) -> None:
    import torch

    from mlc_jupyter.compilation import build_module
    from mlc_jupyter.measure import time_functions
    from mlc_jupyter.models import import_model
    from mlc_jupyter.tune import tune

    torch.manual_seed(0)
    imported = import_model(model, (torch.randn(*shape),))
    default = build_module(imported, "cuda")
    start = time.perf_counter()
    tuned = tune(imported, "cuda", time=budget, work_dir=tempfile.mkdtemp(prefix="bench-gpu-m-"))
    tune_s = time.perf_counter() - start
    report = time_functions({"default": default, "tuned": tuned})  # + eager, torch.compile
    print(f"\n{name} (batch 1), tuned in {tune_s / 60:.1f} min")
    for t in report.timings:
        where = t.device or "-"
        state = "yes" if t.correct else ("NO" if t.correct is False else "-")
        print(f"  {t.name:32} {where:8} {us(t.median_s)} µs  correct: {state}"
              + (f"  ({t.error})" if t.error else ""))  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="512,1024,2048", help="matmul sizes")
    parser.add_argument("--dtypes", default="float32,float16", help="matmul input dtypes")
    parser.add_argument("--time", default=None, help="matmul tuning budget (default: %%mlc_tune's)")
    parser.add_argument("--pace-trials", type=int, default=128, help="trials of the pace rows")
    parser.add_argument("--no-pace", action="store_true", help="skip the pace rows")
    parser.add_argument("--model-time", default=None, help="model tuning budget (default: its)")
    parser.add_argument("--no-models", action="store_true", help="skip the model rows")
    args = parser.parse_args()
    require_gpu()
    import model_support
    import torch

    from mlc_jupyter.compilation import resolve_target

    print(f"GPU: {torch.cuda.get_device_name(0)}, target {resolve_target('cuda')}")
    sizes = [int(s) for s in args.sizes.split(",") if s]
    matmul_table(sizes, [d for d in args.dtypes.split(",") if d], args.time)
    if not args.no_pace:
        pace_table(args.pace_trials)
    if not args.no_models:
        model_rows("ResNet-18", model_support.resnet18(), (1, 3, 224, 224), args.model_time)
        encoder = model_support.encoder_layer()
        model_rows("TransformerEncoderLayer(256, 4)", encoder, (1, 128, 256), args.model_time)


if __name__ == "__main__":
    main()
