"""What the out-of-bounds safety costs: the static check per build, checked builds at run time.

1. static check: the time :func:`~mlc_jupyter.compilation.bounds.find_out_of_bounds` takes on
   the book's ``mm_relu`` (as written, after the §2.4.5 ``transform(jfactor=4)`` schedule, and
   that schedule plus ``parallel`` / ``vectorize``) next to a cold build of the same module
   (``build_module`` with the cache cleared): milliseconds and share of the build.
2. checked vs unchecked: the same modules built both ways, each timed with ``time_module``
   in turns (one timing of each per round, median over the rounds): run time and ratio.

Usage: ``python bench/bench_bounds.py [--runs 20] [--rounds 7]``. Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import statistics

from bench_build_time import LISTING, median_s  # the book's mm_relu; a median of wall times


def variants() -> dict[str, object]:
    """The book's mm_relu as written, after ``transform(jfactor=4)``, and also vectorized."""
    from mlc_jupyter.cells import parse_script
    from mlc_jupyter.tvm_compat import Schedule

    mod = parse_script(LISTING.read_text(), kind="tir").objects["MyModule"]

    def transform(vectorized: bool) -> object:
        sch = Schedule(mod)
        block_y = sch.get_sblock("Y", func_name="mm_relu")
        i, j, k = sch.get_loops(block_y)
        j0, j1 = sch.split(j, factors=[None, 4])
        sch.reorder(j0, k, j1)
        block_c = sch.get_sblock("C", "mm_relu")
        sch.reverse_compute_at(block_c, j0)
        if vectorized:
            sch.parallel(i)
            sch.vectorize(sch.get_loops(block_c)[-1])
        sch.decompose_reduction(block_y, k)
        return sch.mod

    return {
        "mm_relu (book 2.4.3)": mod,
        "mm_relu transform(jfactor=4)": transform(False),
        "  + parallel, vectorize": transform(True),
    }


def bench_static_check(mods: dict[str, object], runs: int) -> None:
    from mlc_jupyter.compilation import build_module, clear_cache
    from mlc_jupyter.compilation.bounds import find_out_of_bounds

    print("static out-of-bounds check per build")
    print(f"{'module':32} {'check ms':>9} {'build ms':>9} {'share':>7}")
    for name, mod in mods.items():
        check = median_s(lambda mod=mod: find_out_of_bounds(mod), runs)

        def cold(mod: object = mod) -> None:
            clear_cache()
            build_module(mod, "llvm", force=True)

        build = median_s(cold, max(3, runs // 4))
        print(f"{name:32} {check * 1e3:9.2f} {build * 1e3:9.1f} {check / build:7.1%}")


def bench_checked(mods: dict[str, object], rounds: int) -> None:
    from mlc_jupyter.compilation import build_module
    from mlc_jupyter.measure import time_module

    print("\nchecked vs unchecked builds at run time (median of rounds, timed in turns)")
    print(f"{'module':32} {'plain us':>9} {'checked us':>11} {'ratio':>7}")
    for name, mod in mods.items():
        builds = [build_module(mod, "llvm", checked=flag) for flag in (False, True)]
        samples: list[list[float]] = [[], []]
        for _ in range(rounds):
            for built, taken in zip(builds, samples, strict=True):
                taken.append(time_module(built, func_name="mm_relu").median_s)
        plain, checked = (statistics.median(s) for s in samples)
        print(f"{name:32} {plain * 1e6:9.1f} {checked * 1e6:11.1f} {checked / plain:7.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="timings of the static check")
    parser.add_argument("--rounds", type=int, default=7, help="rounds of run-time timings")
    args = parser.parse_args()
    mods = variants()
    bench_static_check(mods, args.runs)
    bench_checked(mods, args.rounds)


if __name__ == "__main__":
    main()
