"""The MLC book is the test: its chapters, generated as notebooks, run as written in a real kernel.

``scripts/book_notebooks.py`` turns the English book into ``notebooks/book/*.ipynb`` (every code
cell verbatim, page layout repaired, downloads substituted, each edit recorded in the cell's
``metadata.mlc_book``). Chapters are run here with nbclient in a fresh kernel, in a temporary
working directory (the book writes files such as its weights pickle and tuning logs).
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BOOK_NOTEBOOKS = REPO / "notebooks" / "book"
GENERATOR = REPO / "scripts" / "book_notebooks.py"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _book_present() -> bool:
    sys.path.insert(0, str(GENERATOR.parent))
    try:
        import book_notebooks
    finally:
        sys.path.pop(0)
    return book_notebooks.BOOK.is_file()


def test_the_book_notebooks_are_what_the_generator_makes_of_the_book():
    if not _book_present():
        pytest.skip("the English MLC book (shared/course) is not beside this checkout")
    done = subprocess.run(
        [sys.executable, str(GENERATOR), "--check"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _execute(name: str, checks: dict[str, str] | None = None):
    """Run a chapter; ``checks`` maps a statement of a book cell to a held-out check (not in the
    book) run right after that cell."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(BOOK_NOTEBOOKS / f"{name}.ipynb", as_version=4)
    for statement, check in (checks or {}).items():
        index = next(i for i, c in enumerate(nb.cells) if statement in c.source)
        cell = nbformat.v4.new_code_cell(check, metadata={"mlc_book": {"kind": "held-out check"}})
        nb.cells.insert(index + 1, cell)
    client = NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        resources={"metadata": {"path": tempfile.mkdtemp(prefix="mlc-book-")}},
    )
    client.execute()  # a failing cell not tagged raises-exception stops the run here
    return nb


def _book_cells(nb):
    return [c for c in nb.cells if c.metadata.get("mlc_book", {}).get("kind") == "code"]


def _stream(cell) -> str:
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


def _errors(nb) -> list[tuple[int, str, str]]:
    return [
        (c.metadata["mlc_book"].get("fence_line"), o.ename, ANSI.sub("", "\n".join(o.traceback)))
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
        if o.output_type == "error"
    ]


@pytest.mark.slow
def test_chapter_2_runs_as_written_and_its_checks_and_speedups_hold():
    nb = _execute("ch2_tensor_program")
    # the listings the book prints to show an error fail with the short located message
    errors = {line: (ename, text) for line, ename, text in _errors(nb)}
    assert set(errors) == {500, 529}, errors
    assert "line 1, column 23: invalid syntax" in errors[500][1]
    assert "[block_axis] = T.axis.[axis_type]" in errors[500][1]
    assert all("Traceback" not in text for _, text in errors.values())
    cells = _book_cells(nb)
    # every cell ran, the book's own np.testing.assert_allclose checks among them
    assert all(c.execution_count for c in cells)
    checks = [c for c in cells if "assert_allclose" in c.source]
    assert len(checks) >= 5
    # the book prints the times before and after its transformation: faster after
    printed = "".join(_stream(c) for c in cells)
    before = float(re.search(r"Time cost of MyModule ([\d.e-]+) sec", printed).group(1))
    after = float(re.search(r"Time cost of transformed sch.mod ([\d.e-]+) sec", printed).group(1))
    assert after < before, printed


def _predictions(nb) -> dict[str, str]:
    """``label -> class`` for every "... Prediction: CLASS" line the chapter printed."""
    printed = "".join(_stream(c) for c in _book_cells(nb))
    return dict(re.findall(r"^(.*?) Prediction: (.+)$", printed, flags=re.M))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("chapter", "implementations"),
    [
        # the MLP as low-level NumPy, Relax + TensorIR, with PyTorch kernels, mixed, params bound
        ("ch3_end_to_end", 6),
        # the MLP imported from PyTorch through the book's own FX translator, and PyTorch itself
        ("ch5_integration", 2),
        # the MLP after the book's fusion and lowering passes
        ("ch7_graph_optimization", 1),
    ],
)
def test_chapters_with_the_mlp_run_as_written_and_every_implementation_agrees(
    chapter, implementations
):
    nb = _execute(chapter)
    assert _errors(nb) == []
    assert all(c.execution_count for c in _book_cells(nb))
    predictions = _predictions(nb)
    assert len(predictions) >= implementations, predictions
    assert len(set(predictions.values())) == 1, predictions  # same weights, same answer


@pytest.mark.slow
def test_chapter_6_1_builds_gpu_code_and_its_gpu_only_cells_say_no_gpu():
    nb = _execute("ch6_1_gpu")
    errors = _errors(nb)
    gpu_cells = [c for c in _book_cells(nb) if c.metadata["mlc_book"].get("gpu")]
    assert len(gpu_cells) == 4
    gpu_lines = {c.metadata["mlc_book"]["fence_line"] for c in gpu_cells}
    if errors:  # no GPU here: exactly the GPU cells fail, each with the short "no GPU" message
        assert {line for line, _, _ in errors} == gpu_lines, errors
        for _, ename, text in errors:
            assert ename == "NoGPUError" or "NoGPUError" in text, text
            assert "Traceback" not in text and len(text.splitlines()) <= 5, text
    printed = "".join(_stream(c) for c in _book_cells(nb))
    assert "__global__" in printed  # rt_mod.imported_modules[0].get_source() of the CUDA build
    assert "kernel void" in printed  # and of the Metal build


@pytest.mark.slow
def test_chapter_6_2_tensorizes_onto_the_c_micro_kernel_compiled_with_gcc():
    nb = _execute("ch6_2_hardware")
    assert _errors(nb) == []
    cells = _book_cells(nb)
    assert all(c.execution_count for c in cells)
    last = cells[-1]  # build the tensorized module and check it against NumPy
    assert "assert_allclose" in last.source and "tvm.build(sch.mod" in last.source
    kernel = next(c for c in cells if "pragma_import_llvm" in c.source)
    assert kernel.metadata["mlc_book"]["edits"] == [
        "book typo: TVM's tempdir has relpath, not repath"
    ]


#: Chapter 4's random search times each candidate with time_evaluator on a_nd, b_nd, c_nd: as in
#: the book's TVM the timer runs on those arrays, so c_nd then holds the product.
RANDOM_SEARCH_CHECK = "np.testing.assert_allclose(c_nd.numpy(), c_mm, rtol=1e-5)"


@pytest.mark.slow
def test_chapter_4_tunes_with_the_project_tuner_and_the_book_speedups_hold():
    nb = _execute("ch4_auto_optimization", {"sch = random_search(MyModule)": RANDOM_SEARCH_CHECK})
    assert _errors(nb) == []
    check = next(c for c in nb.cells if c.source == RANDOM_SEARCH_CHECK)
    assert (
        check.execution_count
        and "random_search(MyModule)" in nb.cells[nb.cells.index(check) - 1].source
    )
    assert all(c.execution_count for c in _book_cells(nb))
    printed = "".join(_stream(c) for c in _book_cells(nb))

    def ms(label: str) -> list[float]:
        return [float(x) for x in re.findall(re.escape(label) + r":? ([\d.]+) ms", printed)]

    untuned = ms("Time cost of MyModule")[0]
    assert ms("Time cost of MyModule=>schedule_mm")[0] < untuned  # the hand schedule
    tuned = ms("Time cost of MyModule after tuning")
    assert len(tuned) == 2 and max(tuned) < untuned  # both ms.tune_tir runs (custom, default space)
    # the MLP with its linear0 tuned (section 4.6) predicts what the untuned one did
    predictions = _predictions(nb)
    assert set(predictions) >= {"MyModuleWithParams", "MyModuleWithParams2"}, predictions
    assert len(set(predictions.values())) == 1, predictions


@pytest.mark.slow
def test_each_erratum_typed_as_printed_fails_with_a_message_naming_it_and_its_fix(monkeypatch):
    """The chapters as the book prints them (errata not corrected), run up to their last
    erratum: each erratum's cell (or, for a function it defines, the next cell, which calls it)
    fails at the erratum's line, saying it is a known erratum of the printed book and showing
    the corrected line."""
    if not _book_present():
        pytest.skip("the English MLC book (shared/course) is not beside this checkout")
    import nbformat
    from nbclient import NotebookClient

    sys.path.insert(0, str(GENERATOR.parent))
    import book_notebooks

    from mlc_jupyter.errata import BOOK_ERRATA

    monkeypatch.setattr(book_notebooks, "ERRATA", ())
    printed = book_notebooks.build_all(book_notebooks.BOOK)
    located = [e for e in BOOK_ERRATA if e.located]
    for name in sorted({e.notebook for e in located}):
        nb = nbformat.from_dict(printed[name])
        fences = [c.metadata.get("mlc_book", {}).get("fence_line") for c in nb.cells]
        where = {e: fences.index(e.fence_line) for e in located if e.notebook == name}
        nb.cells = nb.cells[: max(where.values()) + 2]
        client = NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True,
                                resources={"metadata": {"path": tempfile.mkdtemp()}})  # fmt: skip
        client.execute()
        for erratum, index in where.items():
            errors = [ANSI.sub("", "\n".join(o.traceback)) for c in nb.cells[index : index + 2]
                      for o in c.outputs if o.output_type == "error"]  # fmt: skip
            assert errors, (name, erratum.fence_line, "no error")
            text = errors[0]
            assert f"a known erratum of the printed book ({erratum.where})" in text, text
            assert "should read" in text or "delete these lines" in text, text
            assert "Traceback" not in text, text


def _generator():
    sys.path.insert(0, str(GENERATOR.parent))
    try:
        import book_notebooks
    finally:
        sys.path.pop(0)
    return book_notebooks


def test_the_books_tuning_logs_are_folded_one_line_per_log_line():
    """Chapter 4's copied MetaSchedule logs: one folded block per cell's output, no blank lines
    between records, and no record broken mid-word (as the PDF left them)."""
    import json

    nb = json.loads((BOOK_NOTEBOOKS / "ch4_auto_optimization.ipynb").read_text())
    logs = [
        "".join(c["source"]) for c in nb["cells"] if c["metadata"].get("mlc_book", {}).get("log")
    ]
    assert len(logs) == 3  # the three tune_tir / tune_relax calls the book prints
    record = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \[|ID \||\d+ \| |-+$|Total )")
    for text in logs:
        assert text.startswith("<details>\n<summary>The book's output (MetaSchedule's log, ")
        body = text.split("```text\n", 1)[1].split("\n```", 1)[0].split("\n")
        assert all(record.match(line) for line in body), [x for x in body if not record.match(x)]
    first = logs[0]
    assert "tr-a-peak@32: 1.000000" in first and "tr-p-rmse: 0.09557 " in first
    assert "Sending 5 sample(s) to builder\n" in first and "Weighted Latency (us)" in first


def test_log_lines_rejoins_what_the_pdf_wrapped_and_double_spaced():
    gen = _generator()
    printed = [
        "2025-07-10 12:32:12 [DEBUG] [task_scheduler.cc:318]",
        "ID | Name | FLOP | Weighted_",
        "  ↪Latency (us) | Done",
        "-----",
        "",
        "0 | main | 4194304 |  ",
        "",
        "N/A | 0 |  ",
        "",
        "2025-07-10 12:32:16 [DEBUG] XGB stopped. Best iteration: [69] tr-p-rmse: 0.  ",
        "",
        "09557 tr-a-  ",
        "",
        "peak@32: 1.000000",
        '2025-07-10 12:32:20 [INFO] Initializing Task #0: "main',
        '˓→"',
    ]
    assert gen.is_log(printed) and not gen.is_log(["Time cost of MyModule: 1.595 ms"])
    assert gen.log_lines(printed) == [
        "2025-07-10 12:32:12 [DEBUG] [task_scheduler.cc:318]",
        "ID | Name | FLOP | Weighted Latency (us) | Done",
        "-" * len("ID | Name | FLOP | Weighted Latency (us) | Done"),
        "0 | main | 4194304 | N/A | 0 |",
        "2025-07-10 12:32:16 [DEBUG] XGB stopped. Best iteration: [69] tr-p-rmse: 0.09557 "
        "tr-a-peak@32: 1.000000",
        '2025-07-10 12:32:20 [INFO] Initializing Task #0: "main"',
    ]
