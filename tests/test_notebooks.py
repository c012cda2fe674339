"""The notebooks run top to bottom in a real Jupyter kernel (nbclient), on CPU, without network."""

from __future__ import annotations

from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def _execute(name: str, timeout: int = 600):
    """Run ``notebooks/<name>`` in a fresh ``python3`` kernel; return the executed notebook."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    # The repository root as working directory, so the kernel imports this checkout's package.
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOKS.parent)}},
    )
    client.execute()
    return nb


def _outputs(nb, mime: str) -> list[str]:
    return [
        out["data"][mime]
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
        if "data" in out and mime in out["data"]
    ]


def _errors(nb) -> list[str]:
    return [
        f"{out['ename']}: {out['evalue']}"
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
        if out.get("output_type") == "error"
    ]


def test_quickstart_notebook_writes_shows_builds_and_checks_mm_relu_in_a_real_kernel():
    nb = _execute("00_quickstart.ipynb")
    assert _errors(nb) == []
    html = [h for h in _outputs(nb, "text/html") if "mm_relu" in h]
    assert html, "the %%tir cell shows no HTML rendering of MyModule"
    assert "<pre" in html[0] and "var(--jp-" in html[0]  # highlighted with the theme's colours
    plain = "".join(_outputs(nb, "text/plain"))
    assert "def mm_relu" in plain  # the text fallback carries the module too
    streams = "".join(
        out.get("text", "")
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
        if out.get("output_type") == "stream"
    )
    assert "mm_relu matches NumPy" in streams


@pytest.mark.slow
@pytest.mark.parametrize("name", ["01_tensorir.ipynb", "02_relax_end_to_end.ipynb", "04_gpu.ipynb"])
def test_chapter_notebook_runs_without_error(name):
    assert _errors(_execute(name)) == []


@pytest.mark.slow
def test_automatic_optimization_notebook_tunes_and_runs_without_error():
    nb = _execute("03_automatic_optimization.ipynb", timeout=900)
    assert _errors(nb) == []
