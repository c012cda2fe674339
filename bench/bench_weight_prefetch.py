"""Bench: a model's kernels with and without the prefetch of the next weight panel, into each cache.

The evidence behind ``tvm_compat/prefetch.py`` and the annotation that
``compilation/matmul_schedule.py`` puts on the reduction of a product whose ``B`` is a weight
(MobileNet's 1x1 convolutions, a transformer's linear layers), and ``conv_schedule.prefetch_weight``
on a direct convolution's and a Winograd product's (ResNet-18's): each kernel of the model's
default build that the annotation reaches is compiled by the CPU lowering (the pass first) as
the package lowers it (each loop's prefetches into the caches its schedule asks for), then with
every loop's prefetches into the caches each of ``--localities`` names (``llvm.prefetch``'s
locality: 3 every cache, 1 the second level and beyond), and by the same lowering without the
pass; all are timed in turns by TVM's timer, their arguments flushed from the caches before
each call (cold: the weight arrives from memory, as it does once per model call when the
model's weights do not fit in the cache) and not (warm). Then the whole model, built with each
lowering, timed in turns.

With ``--f2-from 7`` a layer gets F(2x2, 3x3) from that output size on (``winograd.TILE_FROM``'s;
ResNet-18's 7x7x512 layers, as a model's tuning may compute them).

    python bench/bench_weight_prefetch.py [--model mobilenet|encoder|resnet18] [--rounds 7]
        [--localities 3,1] [--f2-from 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # model_support


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model", default="mobilenet", choices=("mobilenet", "encoder", "resnet18")
    )
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=5, help="TVM timer samples per round")
    parser.add_argument(
        "--localities", default="3,1", help="llvm.prefetch localities to race (3: every cache)"
    )
    parser.add_argument("--f2-from", type=int, help="F(2x2) from this output size (e.g. 7)")
    args = parser.parse_args()

    import numpy as np
    import torch
    from model_support import encoder_layer, mobilenet_v1, resnet18

    from mlc_jupyter.compilation import (
        build_module,
        cached_build,
        clear_cache,
        device_for,
        winograd,
    )
    from mlc_jupyter.compilation.call import prepare, relax_vm, to_device
    from mlc_jupyter.measure.timer import model_inputs
    from mlc_jupyter.models import import_model
    from mlc_jupyter.tvm_compat import (
        PREFETCH_ANNOTATION,
        ir_module_type,
        kernel_library,
        kernel_timer,
        param_buffers,
        register_tiles_pipeline,
        register_tir_pipeline,
        tensor,
    )
    from mlc_jupyter.tvm_compat import (
        compile as tvm_compile,
    )
    from mlc_jupyter.tvm_compat.lowering import locals_on_stack
    from mlc_jupyter.tvm_compat.prefetch import prefetch_next_panels

    if args.f2_from is not None:
        winograd.TILE_FROM = {**winograd.TILE_FROM, 2: args.f2_from}

    without = "bench_without_prefetch"
    register_tir_pipeline(without, lambda: [locals_on_stack()], tir_cse=False)
    pipelines = {"none": without}
    for locality in (int(n) for n in args.localities.split(",")):
        name = f"bench_prefetch_locality_{locality}"
        register_tir_pipeline(
            name,
            lambda: [locals_on_stack()],
            lambda locality=locality: [prefetch_next_panels(locality)],
            tir_cse=False,
        )
        pipelines[f"locality {locality}"] = name
    pipelines["as scheduled"] = register_tiles_pipeline()  # the package's own
    ways = [way for way in pipelines if way != "none"]
    torch.manual_seed(0)
    if args.model in ("mobilenet", "resnet18"):
        model = mobilenet_v1() if args.model == "mobilenet" else resnet18()
        x = torch.randn(1, 3, 224, 224)
    else:
        model, x = encoder_layer().eval(), torch.randn(1, 128, 256)
    imported = import_model(model, x)
    built = build_module(imported, persist=False)
    device = device_for(built.target)
    rng = np.random.default_rng(0)
    kernels = {}
    for gv, func in built.mod.functions_items():
        if not hasattr(func, "body") or PREFETCH_ANNOTATION not in func.script():
            continue
        mod = ir_module_type()({"main": func.with_attr("global_symbol", "main")})
        tensors = [
            tensor(rng.random([int(d) for d in b.shape]).astype("float32"))
            for b in param_buffers(func)
        ]
        for way, pipeline in pipelines.items():
            lib = kernel_library(tvm_compile(mod, built.target, pipeline), "main")
            kernels[(gv.name_hint, way)] = (lib, tensors)
    samples: dict = {(key, cold): [] for key in kernels for cold in (True, False)}
    start_load = os.getloadavg()[0]
    for _ in range(args.rounds):
        for (key, cold), times in samples.items():
            lib, tensors = kernels[key]
            timer = kernel_timer(lib, "main", device, args.repeat, cold)
            times.append(float(timer(*tensors).median))
    print(
        f"{args.model}'s products with a weight (default build), {os.cpu_count()} cores, TVM's timer "
        f"(median of {args.repeat} calls) in {args.rounds} rounds in turns, median of rounds; "
        f"load {start_load:.2f} before, {os.getloadavg()[0]:.2f} after; target {built.target}"
    )
    print(
        "each kernel without the prefetch (cold, warm), then with it per locality (the time, the "
        "speed-up over none); 'as scheduled': each loop's own (the package's lowering)"
    )
    names = sorted({key[0] for key in kernels})
    for name in names:
        for cold in (True, False):
            base = statistics.median(samples[((name, "none"), cold)])
            row = [f"{name:44s} {'cold' if cold else 'warm'} none {base * 1e6:7.1f}us"]
            for way in ways:
                ahead = statistics.median(samples[((name, way), cold)])
                row.append(f"{way} {ahead * 1e6:7.1f}us {base / ahead:5.2f}x")
            print(" | ".join(row))

    # the whole model, built by each lowering, timed in turns
    models = {}
    for way, pipeline in pipelines.items():
        clear_cache(disk=False)
        original = cached_build.tir_pipeline
        cached_build.tir_pipeline = lambda target, pipeline=pipeline: pipeline
        try:
            whole = build_module(imported, force=True, persist=False)
        finally:
            cached_build.tir_pipeline = original
        sig = prepare(whole, None)
        tensors, _ = to_device(whole, sig, tuple(model_inputs(whole, sig, None, 0)))
        models[way] = (relax_vm(whole)[sig.name], tensors)
    whole_samples: dict = {way: [] for way in models}
    for _ in range(args.rounds * 3):
        for way, (call, tensors) in models.items():
            call(*tensors)
            start = time.perf_counter()
            for _ in range(10):
                call(*tensors)
            whole_samples[way].append((time.perf_counter() - start) / 10)
    base = statistics.median(whole_samples["none"])
    row = [f"without {base * 1e3:.3f} ms"]
    for way in ways:
        ahead = statistics.median(whole_samples[way])
        row.append(f"{way} {ahead * 1e3:.3f} ms ({base / ahead:.2f}x)")
    print(
        f"whole model, wall clock per call, {args.rounds * 3} rounds of 10 calls in turns: "
        + ", ".join(row)
    )


if __name__ == "__main__":
    main()
