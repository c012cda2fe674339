"""Parse time of the book's ``mm_relu`` module: ``%%tir`` in a real IPython shell vs TVMScript.

``tvm.script.from_source`` cannot read the course's spelling, so it gets the same module in TVM
0.27's spelling (the dialect translation of the book's text). The magic is timed on both texts,
and once more through ``run_cell`` with the highlighted display a notebook user sees.

Usage: ``python bench/bench_parse.py [--runs N]``. Prints medians in milliseconds and ratios.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

BOOK_TEXT = (
    Path(__file__).resolve().parents[1] / "tests" / "course" / "listings" / "ch2_mm_relu.py"
).read_text()


def median_ms(fn: Callable[[], object], runs: int) -> float:
    """Median wall time of ``fn`` over ``runs`` calls (after one warm-up call), in ms."""
    fn()
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30, help="timed runs per case (default 30)")
    runs = parser.parse_args().runs

    import tvm
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    from mlc_jupyter import tvm_compat
    from mlc_jupyter.dialect import translate

    modern = translate(BOOK_TEXT).source
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "mlc_jupyter")

    def magic(text: str) -> Callable[[], object]:
        return lambda: shell.run_cell_magic("tir", "--quiet", text)

    def cell_with_display() -> None:
        with capture_output():  # the display is built, then kept off the terminal
            result = shell.run_cell("%%tir\n" + BOOK_TEXT, store_history=False)
        assert result.success, result.error_in_exec

    def from_source() -> object:
        return tvm.script.from_source(modern)

    reference = from_source()
    magic(BOOK_TEXT)()
    assert tvm_compat.structural_equal(shell.user_ns["MyModule"], reference)

    base = median_ms(from_source, runs)
    rows = [
        ("tvm.script.from_source, 0.27 text", base),
        ("%%tir --quiet, 0.27 text", median_ms(magic(modern), runs)),
        ("%%tir --quiet, book text", median_ms(magic(BOOK_TEXT), runs)),
        ("run_cell('%%tir' + book text), with display", median_ms(cell_with_display, runs)),
    ]
    print(f"mm_relu parse time, median of {runs} runs (TVM {tvm.__version__})")
    for label, ms in rows:
        print(f"  {label:<46} {ms:8.2f} ms   x{ms / base:5.2f}")


if __name__ == "__main__":
    main()
