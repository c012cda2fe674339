"""On a CUDA GPU: notebook 04 and the book's chapter 6 kernels run, checked against NumPy.

Marked ``gpu`` and skipped without a local CUDA GPU (this project's CI has none); a session with
a GPU runs them with ``pytest -m gpu``. Each test states what a user of the GPU chapter relies on.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from build_support import (
    blocking,
    blocking_with_shared,
    gpu_matmul,
    matmul,
    vector_add_gpu,
    window_sum_gpu,
)

from mlc_jupyter.compilation import build_module, gpu_present

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not gpu_present("cuda"), reason="needs a local CUDA GPU"),
]

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
RNG = np.random.default_rng(17)


def _uniform(*shape: int) -> np.ndarray:
    return RNG.uniform(size=shape).astype("float32")


#: The book's §6.1 kernels: how to make the module, its inputs, and NumPy's answer.
BOOK_KERNELS = {
    "6.1.3 vector add": (vector_add_gpu, lambda: (_uniform(1024), _uniform(1024)), np.add),
    "6.1.4 window sum": (
        window_sum_gpu,
        lambda: (_uniform(1027),),
        lambda a: a[:1024] + a[1:1025] + a[2:1026],  # B[i] = A[i] + A[i+1] + A[i+2], 1024 sums
    ),
    "6.1.5 local blocking": (
        lambda: gpu_matmul(blocking, 8, 8, 8, 8, 4),
        lambda: (_uniform(1024, 1024), _uniform(1024, 1024)),
        np.matmul,
    ),
    "6.1.6 shared-memory blocking": (
        lambda: gpu_matmul(blocking_with_shared, 8, 8, 8, 8, 8),
        lambda: (_uniform(1024, 1024), _uniform(1024, 1024)),
        np.matmul,
    ),
}


@pytest.mark.parametrize("name", list(BOOK_KERNELS))
def test_the_books_chapter_6_kernels_run_on_the_gpu_and_match_numpy(name):
    make, inputs, reference = BOOK_KERNELS[name]
    built = build_module(make(), "cuda")
    assert str(built.target.attrs["arch"]).startswith("sm_")  # asked from the device
    args = inputs()
    np.testing.assert_allclose(built(*args), reference(*args), rtol=1e-4, atol=1e-3)


def test_mlc_time_runs_the_gpu_kernels_and_checks_them_against_numpy(shell):
    shell.user_ns["Blocked"] = gpu_matmul(blocking, 8, 8, 8, 8, 4)
    shell.user_ns["Shared"] = gpu_matmul(blocking_with_shared, 8, 8, 8, 8, 8)
    shell.run_line_magic("mlc_build", "Blocked --target cuda")
    shell.run_line_magic("mlc_build", "Shared --target cuda")
    report = shell.run_line_magic("mlc_time", 'Blocked_lib Shared_lib --ref "A @ B" -o')
    for name in ("Blocked_lib", "Shared_lib"):
        row = report[name]
        assert row.correct is True and row.gflops and row.gflops > 0, row


def test_tuning_on_the_local_gpu_uses_its_limits_and_returns_a_correct_kernel(tmp_path):
    from mlc_jupyter.tune import tune
    from mlc_jupyter.tune.options import tuning_target

    target = tuning_target("cuda")
    for limit in ("max_threads_per_block", "max_shared_memory_per_block"):
        assert int(target.attrs[limit]) > 0  # MetaSchedule's GPU rules need them
    result = tune(matmul(256), "cuda", trials=16, work_dir=tmp_path)
    assert result.best_latency_s is not None and result.baseline_latency_s is None
    a, b = _uniform(256, 256), _uniform(256, 256)
    np.testing.assert_allclose(build_module(result.mod, "cuda")(a, b), a @ b, rtol=1e-4, atol=1e-3)


@pytest.mark.slow
def test_notebook_04_runs_its_gpu_cells_on_the_gpu_and_checks_them_against_numpy():
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(NOTEBOOKS / "04_gpu.ipynb", as_version=4)
    NotebookClient(
        nb, timeout=600, kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOKS.parent)}},
    ).execute()  # fmt: skip
    outputs = [out for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs]
    errors = [f"{o['ename']}: {o['evalue']}" for o in outputs if o["output_type"] == "error"]
    assert errors == []
    streams = "".join(o.get("text", "") for o in outputs if o["output_type"] == "stream")
    assert "GPU present: True" in streams and "no GPU here" not in streams
    tables = [
        o["data"]["text/plain"]
        for o in outputs
        if "data" in o and "correct" in o["data"].get("text/plain", "")
    ]
    for lib in ("vecadd_sch_lib", "blocked_sch_lib", "shared_sch_lib"):
        rows = [line for table in tables for line in table.splitlines() if line.startswith(lib)]
        assert rows and all(row.rstrip().endswith("yes") for row in rows), (lib, tables)
