"""How fast the trace replay widget answers: load, step, edit a decision, for two traces.

Traces: the book's chapter 4 ``stochastic_schedule_mm`` (6 instructions) and a real tuned trace
of a 128x128 matmul (16 trials, about 40 instructions with postprocessing). For each: loading a
session (one analysing replay), drawing a step in the widget (replay + highlight + diff), and an
edited tile decision (check + replay + re-analysis), against a bare ``apply_to_schedule``.

Usage: ``python bench/bench_trace.py [--runs N]``. Prints medians in milliseconds.
"""

from __future__ import annotations

import argparse
import tempfile

from bench_parse import median_ms  # bench/ is on sys.path when a bench runs
from bench_tune import matmul


def _book_schedule():
    import tvm

    from mlc_jupyter.tvm_compat import Schedule

    mod = tvm.IRModule({"main": matmul(128)})
    sch = Schedule(mod, seed=7)
    block = sch.get_sblock("C")
    _, j, k = sch.get_loops(block)
    factors = sch.sample_perfect_tile(loop=j, n=2, max_innermost_factor=16)
    j_0, j_1 = sch.split(j, factors)
    sch.reorder(sch.get_loops(block)[0], j_0, k, j_1)
    sch.decompose_reduction(block, k)
    return sch, mod


def report(name: str, trace, mod, runs: int) -> None:
    from mlc_jupyter.trace import TraceSession
    from mlc_jupyter.tvm_compat import Schedule
    from mlc_jupyter.widgets.trace_replay import TraceReplay

    bare = median_ms(lambda: trace.apply_to_schedule(Schedule(mod), remove_postproc=False), runs)
    load = median_ms(lambda: TraceSession(trace, mod), runs)
    widget = TraceReplay(session=TraceSession(trace, mod))

    def step() -> None:
        widget.session._modules.clear()  # a cold step: replay, not the cache
        widget.step = (widget.step + 1) % (widget.n_steps + 1)

    draw = median_ms(step, runs)
    session = TraceSession(trace, mod)
    tile = next(s for s in session.steps if s.decision and s.decision.kind == "tile")
    values = [tile.decision.value, list(reversed(tile.decision.value))]
    flip = iter(range(10**6))
    edit = median_ms(lambda: session.set_decision(tile.index, values[next(flip) % 2]), runs)
    print(
        f"{name:<28} {len(trace.insts):>3} insts | bare replay {bare:7.2f} ms | load {load:7.2f}"
        f" ms | widget step {draw:7.2f} ms | edit tile {edit:7.2f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    from mlc_jupyter.tune import tune

    sch, mod = _book_schedule()
    report("book stochastic_schedule_mm", sch.trace, mod, args.runs)
    with tempfile.TemporaryDirectory() as work:
        result = tune(matmul(128), trials=16, per_iter=16, work_dir=work, seed=1)
        workload = next(iter(result.task_workloads.values()))
        report("tuned 128^3 matmul", result.trace, workload, args.runs)


if __name__ == "__main__":
    main()
