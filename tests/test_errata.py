"""The printed book's known errata: the table matches the book, and a failure on one is named."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlc_jupyter.errata import BOOK_ERRATA, erratum_at

BOOK = Path(__file__).resolve().parents[2] / "shared" / "course" / "003_0efb66a8e9a300ba.txt"


def test_every_erratum_is_printed_in_the_book_near_its_fence():
    if not BOOK.is_file():
        pytest.skip("the English MLC book (shared/course) is not beside this checkout")
    lines = BOOK.read_text().split("\n")
    for erratum in BOOK_ERRATA:
        first = erratum.printed.strip("\n").split("\n")[0].strip()
        nearby = "\n".join(lines[erratum.fence_line - 1 : erratum.fence_line + 200])
        assert first in nearby, (erratum.section, first)


def test_a_failure_on_the_printed_line_names_the_erratum_and_shows_the_corrected_line():
    cell = "sch = tvm.tir.Schedule(MyModule)\nIPython.display.HTML(code2html(sch.mod.script())))\n"
    erratum = erratum_at(cell, 2)
    assert erratum is not None and erratum_at(cell, 1) is None
    assert erratum.explain(cell) == (
        "a known erratum of the printed book (sections 4.3, 4.4.1): a closing parenthesis too many; "
        "the line should read: IPython.display.HTML(code2html(sch.mod.script()))"
    )


def test_an_erratum_inside_a_longer_line_keeps_the_rest_of_the_corrected_line():
    cell = 'def f():\n    ll_path = temp.repath("temp.ll")\n'
    erratum = erratum_at(cell, 2)
    assert erratum is not None
    assert erratum.explain(cell).endswith('the line should read: ll_path = temp.relpath("temp.ll")')


def test_markup_to_delete_says_so_and_a_mistake_checked_in_another_cell_is_not_claimed():
    cell = "<!-- todo -->\n<!-- For CI, do not run this part of the code -->\nx = 1\n"
    erratum = erratum_at(cell, 1)
    assert erratum is not None and erratum.explain(cell).endswith("delete these lines")
    unlocated = next(e for e in BOOK_ERRATA if not e.located)
    assert erratum_at(unlocated.printed, 2) is None
