"""What course mode costs per cell: translating the book's code cells (no TVM involved).

Times :func:`mlc_jupyter.cells.course.translate_cell` (the rule table, the string/comment scan and
the syntax check course mode runs on every cell) over every code cell of the generated book
notebooks, and IPython's own transform of the same cells for scale.

Usage: ``python bench/bench_translate.py [--runs N]``. Prints the median ms per cell, by cell size.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import time
from pathlib import Path

BOOK = Path(__file__).resolve().parents[1] / "notebooks" / "book"


def cells() -> list[str]:
    """The book's code cells, as the notebooks hold them."""
    found = []
    for path in sorted(BOOK.glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] == "code" and cell["metadata"].get("mlc_book", {}).get("kind"):
                found.append("".join(cell["source"]))
    return found


def per_cell_ms(fn, texts: list[str], runs: int) -> list[float]:
    """Median ms of ``fn(text)`` for each text."""
    out = []
    for text in texts:
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            fn(text)
            times.append(time.perf_counter() - start)
        out.append(statistics.median(times) * 1e3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    runs = parser.parse_args().runs
    from IPython.core.inputtransformer2 import TransformerManager

    from mlc_jupyter.cells.course import translate_cell

    texts = [t for t in cells() if t.strip()]
    manager = TransformerManager()

    def course(text: str) -> None:
        with contextlib.suppress(Exception):  # a refused cell costs the same
            translate_cell(text)

    ours = per_cell_ms(course, texts, runs)
    ipython = per_cell_ms(manager.transform_cell, texts, runs)
    sizes = [len(t.splitlines()) for t in texts]
    print(f"{len(texts)} book cells, {statistics.median(sizes)} lines median, {max(sizes)} max")
    for label, pick in (("<= 10 lines", lambda n: n <= 10), ("11-30 lines", lambda n: 10 < n <= 30),
                        ("> 30 lines", lambda n: n > 30), ("all", lambda n: True)):  # fmt: skip
        chosen = [i for i, n in enumerate(sizes) if pick(n)]
        if chosen:
            a = statistics.median(ours[i] for i in chosen)
            b = statistics.median(ipython[i] for i in chosen)
            print(
                f"{label:>12}: course mode {a:.3f} ms/cell, IPython's own transform {b:.3f} ms/cell"
            )


if __name__ == "__main__":
    main()
