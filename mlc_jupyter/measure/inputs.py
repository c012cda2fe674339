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
    """One NumPy array per input parameter of ``sig`` (see :func:`random_array`), and a random
    float in [0, 1) for a floating-point scalar (a value in the data, like an array's element).

    An integer or boolean scalar is refused: it usually sizes a loop or offsets an index
    (``for i in range(n)``), so a made-up value would time other work than the user's, or read
    outside a buffer; the user passes it with ``--args``.
    """
    rng = np.random.default_rng(seed)
    arrays: list[Any] = []
    for param in sig.inputs:
        if param.scalar and np.dtype(param.dtype).kind == "f":
            arrays.append(float(rng.random()))
            continue
        if param.scalar:
            raise TimingError(
                f"cannot make an input for {param.name!r}: it is a scalar ({param.dtype}), which "
                "usually sizes a loop or an index, so no value is made up for it",
                hint=f"pass every argument with --args, in order: {_order(sig)}",
            )
        if param.shape is None or None in param.shape:
            raise TimingError(
                f"cannot make an input for {param.name!r}: its shape is symbolic",
                hint="pass the inputs with --args",
            )
        arrays.append(random_array(rng, param.shape, param.dtype or "float32"))
    return arrays


def _order(sig: Any) -> str:
    """``(A, B, n)``: the parameter names in call order, for a hint."""
    return "(" + ", ".join(p.name for p in sig.inputs) + ")"
