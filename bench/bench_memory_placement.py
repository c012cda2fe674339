"""Bench: whole models with each planned tensor at the middle of its storage, against TVM's plan.

TVM's memory plan puts tensors of several sizes in one storage, each from its first byte; the
default CPU build places each at the storage's middle instead
(:mod:`mlc_jupyter.tvm_compat.memory_plan`), so that the halves its kernels split between the
cores always meet at the same byte. What that buys depends on the host's state: where the two
cores sit far apart (TVM's fork/join several times its low figure), each line one core takes
over from the other costs several times more (``bench_parallel_launch.py``).

Each model is built both ways in one process and timed in turns, window after window, with the
fork/join measured before each window; the table gives the medians of the windows in each state.

    python bench/bench_memory_placement.py [--models mobilenet resnet18 encoder] [--seconds 240]
"""

from __future__ import annotations

import argparse
import statistics
import time

#: A window whose fork/join takes at least this long ran with the cores far apart.
FAR_APART_US = 1.2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", default=["mobilenet", "resnet18", "encoder"])
    parser.add_argument("--seconds", type=float, default=240, help="of windows per model")
    parser.add_argument("--window-s", type=float, default=0.6, help="each build's time a window")
    args = parser.parse_args()

    from bench_models import build_model
    from bench_parallel_launch import fork_join_s

    from mlc_jupyter.compilation import build_module, cached_build
    from mlc_jupyter.compilation.call import prepare, relax_vm, to_device
    from mlc_jupyter.measure.timer import model_inputs
    from mlc_jupyter.models import import_model
    from mlc_jupyter.tvm_compat import memory_plan

    placements = {
        "TVM's plan": lambda target: memory_plan.build_pipeline(middle=False),
        "at the middle": cached_build.relax_build_pipeline,
    }
    print(f"{'model':10} {'state':16} {'windows':>7} "
          + " ".join(f"{p + ' ms':>17}" for p in placements) + f" {'plan/middle':>11}")  # fmt: skip
    default = cached_build.relax_build_pipeline
    for name in args.models:
        imported = import_model(*build_model(name))
        runs = {}
        for placement, pipeline in placements.items():
            cached_build.relax_build_pipeline = pipeline
            built = build_module(imported, persist=False, force=True)
            sig = prepare(built, None)
            tensors, _ = to_device(built, sig, tuple(model_inputs(built, sig, None, 0)))
            runs[placement] = (relax_vm(built)[sig.name], tensors)
        cached_build.relax_build_pipeline = default
        windows: dict[str, list[list[float]]] = {"close": [], "far apart": []}
        end = time.time() + args.seconds
        while time.time() < end:
            parallel, serial = fork_join_s(3)
            state = "far apart" if (parallel - serial) * 1e6 >= FAR_APART_US else "close"
            row = []
            for run, tensors in runs.values():
                samples, stop = [], time.perf_counter() + args.window_s
                while time.perf_counter() < stop:
                    start = time.perf_counter()
                    for _ in range(5):
                        run(*tensors)
                    samples.append((time.perf_counter() - start) / 5)
                row.append(statistics.median(samples))
            windows[state].append(row)
        for state, rows in windows.items():
            if not rows:
                continue
            medians = [statistics.median(r[i] for r in rows) for i in range(len(placements))]
            ratio = statistics.median(r[0] / r[1] for r in rows)
            print(f"{name:10} {'cores ' + state:16} {len(rows):7d} "
                  + " ".join(f"{m * 1e3:17.3f}" for m in medians) + f" {ratio:11.3f}",
                  flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
