"""The book's chapter 7 in a real IPython shell: its imports, the MLP, its rewriters (listings)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

LISTINGS = Path(__file__).resolve().parents[1] / "course" / "listings"
IMPORTS = """import numpy as np
import tvm
from tvm import relax, topi
from tvm.ir.module import IRModule
"""
#: The book's §7.3 module written in TVMScript (course spelling).
MULTIPLY_ADD = (LISTINGS / "ch7_ewise_multiply_add.py").read_text()


def listing(name: str) -> str:
    return (LISTINGS / f"{name}.py").read_text()


def mlp_params(seed: int = 0) -> dict[str, np.ndarray]:
    """Synthetic weights of the book's FashionMNIST MLP (the real ones need a download)."""
    rng = np.random.default_rng(seed)
    return {
        "w0": rng.standard_normal((128, 784), dtype="float32") * 0.05,
        "b0": rng.standard_normal(128, dtype="float32"),
        "w1": rng.standard_normal((10, 128), dtype="float32") * 0.1,
        "b1": rng.standard_normal(10, dtype="float32"),
    }


def numpy_mlp(x: np.ndarray, p: dict[str, np.ndarray]) -> np.ndarray:
    return np.maximum(x @ p["w0"].T + p["b0"], 0) @ p["w1"].T + p["b1"]


def load_chapter(shell: Any) -> dict[str, Any]:
    """Run the chapter's imports and ``create_model`` in ``shell``; return its namespace."""
    assert shell.run_cell(IMPORTS).success
    shell.user_ns["mlp_params"] = mlp_params()
    assert shell.run_cell(listing("ch7_create_model")).success
    return shell.user_ns


def run_mlp(mod: Any, x: np.ndarray) -> np.ndarray:
    """Build a Relax module for this CPU and run ``main`` on ``x``."""
    import tvm

    from mlc_jupyter import tvm_compat
    from mlc_jupyter.compilation import resolve_target

    vm = tvm.relax.VirtualMachine(tvm_compat.compile(mod, resolve_target("llvm")), tvm.cpu())
    return vm["main"](tvm_compat.tensor(x)).numpy()
