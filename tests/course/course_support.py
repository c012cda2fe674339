"""Helpers for the course tests: run a book listing through a real ``%%tir`` / ``%%relax`` cell."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

LISTINGS = Path(__file__).resolve().parent / "listings"


def listing(name: str) -> str:
    """The text of ``listings/<name>.py`` (a book listing, comments included)."""
    return (LISTINGS / f"{name}.py").read_text()


def run_listing(shell: Any, name: str, kind: str = "tir") -> Any:
    """Run a listing as the body of a ``%%tir`` / ``%%relax`` cell; return the cell's value."""
    value = shell.run_cell_magic(kind, "--quiet", listing(name))
    assert value is None  # --quiet binds without returning
    return shell.user_ns["_"]


def cpu_target() -> Any:
    """This machine's CPU as an LLVM target (plain "llvm" means SSE-only x86-64)."""
    import tvm

    from mlc_jupyter.tvm_compat import host_cpu

    return tvm.target.Target({"kind": "llvm", "mcpu": host_cpu()})


def build(mod: Any, target: Any = None) -> Any:
    """Compile a TIR or Relax module for this CPU (or ``target``)."""
    from mlc_jupyter import tvm_compat

    return tvm_compat.compile(mod, cpu_target() if target is None else target)


def call(lib: Any, name: str, *arrays: np.ndarray) -> list[np.ndarray]:
    """Call ``lib[name]`` on copies of ``arrays``; return every argument's contents afterwards.

    The arrays go through ``tvm.runtime.tensor`` (64-byte aligned): TVM's kernels assume aligned
    buffers, and a NumPy array passed directly crashes the process when it is not aligned.
    """
    from mlc_jupyter import tvm_compat

    tensors = [tvm_compat.tensor(np.ascontiguousarray(a)) for a in arrays]
    lib[name](*tensors)
    return [t.numpy() for t in tensors]


def run_relax(mod: Any, *args: np.ndarray) -> np.ndarray:
    """Build a Relax module for the CPU and run its ``main`` on NumPy inputs."""
    import tvm

    from mlc_jupyter import tvm_compat

    vm = tvm.relax.VirtualMachine(build(mod), tvm.cpu())
    out = vm["main"](*[tvm_compat.tensor(a) for a in args])
    return out.numpy()


def mlp_weights(seed: int = 0) -> dict[str, np.ndarray]:
    """Synthetic weights of the book's FashionMNIST MLP (the real ones need a download)."""
    rng = np.random.default_rng(seed)
    return {
        "x": rng.random((1, 784), dtype="float32"),
        "w0": rng.standard_normal((128, 784), dtype="float32") * 0.05,
        "b0": rng.standard_normal(128, dtype="float32"),
        "w1": rng.standard_normal((10, 128), dtype="float32") * 0.1,
        "b1": rng.standard_normal(10, dtype="float32"),
    }


def numpy_mlp(x, w0, b0, w1, b1) -> np.ndarray:
    """The book's §3.3 reference: relu(x @ w0.T + b0) @ w1.T + b1."""
    return np.maximum(x @ w0.T + b0, 0) @ w1.T + b1


def gone_listing_error(shell: Any, name: str, kind: str) -> Any:
    """Run a listing of ``listings/gone/``; return the cell error it raises (it must raise one)."""
    from mlc_jupyter.errors import CellError

    text = listing(f"gone/{name}")
    before = dict(shell.user_ns)
    try:
        shell.run_cell_magic(kind, "--quiet", text)
    except CellError as err:
        assert all(shell.user_ns.get(k) is v for k, v in before.items() if k != "_")
        return err
    raise AssertionError(f"{name} parsed, but it is listed as not expected to parse")


def cuda_source(mod: Any) -> str:
    """Build ``mod`` for CUDA (no GPU needed to generate code) and return the kernel source."""
    import tvm

    # An explicit arch: without a GPU there is no device to ask for one.
    lib = build(mod, tvm.target.Target({"kind": "cuda", "arch": "sm_80"}))
    return "\n".join(m.inspect_source() for m in lib.mod.imports if m.kind == "cuda")


COURSE = Path(__file__).resolve().parents[3] / "shared" / "course"


def seed_cells(prefix: str) -> dict[int, str]:
    """The Python code fences of the course seed ``shared/course/<prefix>_*.txt``, by the line of
    their opening fence (skips the test when the course material is not beside this checkout)."""
    import pytest

    found = sorted(COURSE.glob(f"{prefix}_*.txt"))
    if not found:
        pytest.skip(f"the course seed {prefix}_* (shared/course) is not beside this checkout")
    lines = found[0].read_text(encoding="utf-8", errors="replace").split("\n")
    cells: dict[int, str] = {}
    start = None
    for number, line in enumerate(lines, start=1):
        if start is None and line.strip() == "```python":
            start = number
        elif start is not None and line.strip() == "```":
            cells[start] = "\n".join(lines[start : number - 1]) + "\n"
            start = None
    return cells


def run_in_kernel(cells: list[str], timeout: int = 600) -> Any:
    """Run ``cells`` in order in a fresh kernel after ``%load_ext mlc_jupyter`` (course mode on),
    in a temporary working directory; every cell runs, errors are kept in its outputs. Returns
    the notebook (``nb.cells[i + 1]`` is ``cells[i]``)."""
    import tempfile

    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in ["%load_ext mlc_jupyter", *cells]]
    client = NotebookClient(
        nb, timeout=timeout, kernel_name="python3", allow_errors=True,
        resources={"metadata": {"path": tempfile.mkdtemp(prefix="mlc-seed-")}},
    )  # fmt: skip
    client.execute()
    return nb


def cell_text(cell: Any) -> str:
    """What a cell printed (its streams) and its errors' tracebacks, colours removed."""
    import re

    parts = []
    for out in cell.outputs:
        if out.output_type == "stream":
            parts.append(out.text)
        elif out.output_type == "error":
            parts.append("\n".join(out.traceback))
    return re.sub(r"\x1b\[[0-9;]*m", "", "".join(parts))


def cell_errors(nb: Any) -> list[tuple[int, str]]:
    """``(index, traceback)`` of every cell that failed."""
    return [
        (i, cell_text(c))
        for i, c in enumerate(nb.cells)
        if any(o.output_type == "error" for o in c.outputs)
    ]
