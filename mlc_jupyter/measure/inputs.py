"""Seeded inputs generated from a function's signature (every variant sees the same data)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import TimingError


def random_array(rng: np.random.Generator, shape: Any, dtype: str) -> np.ndarray:
    """Random data of ``shape`` and ``dtype``: floats in [0, 1), booleans, small integers."""
    kind = np.dtype(dtype).kind
    if kind == "f":
        return rng.random(shape).astype(dtype)
    if kind == "b":
        return rng.integers(0, 2, shape).astype(dtype)
    return rng.integers(0, 8, shape).astype(dtype)


def random_inputs(sig: Any, seed: int = 0) -> list[Any]:
    """One NumPy array per input parameter of ``sig`` (see :func:`random_array`)."""
    rng = np.random.default_rng(seed)
    arrays = []
    for param in sig.inputs:
        if param.shape is None or None in param.shape:
            raise TimingError(
                f"cannot make an input for {param.name!r}: its shape is symbolic",
                hint="pass the inputs with --args",
            )
        arrays.append(random_array(rng, param.shape, param.dtype or "float32"))
    return arrays
