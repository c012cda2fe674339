"""The project's notebooks run top to bottom in a real Jupyter kernel (nbclient), as Run All runs
them: the notebook tests read the outputs, and the browser tests open the same run in JupyterLab,
so a notebook as long as chapter 5's runs once per session."""

from __future__ import annotations

from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def execute_notebook(name: str, timeout: int = 600):
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
