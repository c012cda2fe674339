"""Seeded inputs generated from a function's signature (every variant sees the same data)."""

from __future__ import annotations

from typing import Any

from ..errors import TimingError


def random_inputs(sig: Any, seed: int = 0) -> list[Any]:
    """One NumPy array per input parameter of ``sig`` (floats in [0, 1), small integers)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    arrays = []
    for param in sig.inputs:
        if param.shape is None or None in param.shape:
            raise TimingError(
                f"cannot make an input for {param.name!r}: its shape is symbolic",
                hint="pass the inputs with --args",
            )
        dtype = np.dtype(param.dtype or "float32")
        if dtype.kind == "f":
            arrays.append(rng.random(param.shape).astype(dtype))
        elif dtype.kind == "b":
            arrays.append(rng.integers(0, 2, param.shape).astype(dtype))
        else:
            arrays.append(rng.integers(0, 8, param.shape).astype(dtype))
    return arrays
