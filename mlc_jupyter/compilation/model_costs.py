"""What a Relax model's ``main`` costs: how often it calls each kernel, what its weights hold.

Shared by the import summary (kernels and weights) and the timing of a whole model (its FLOPs are
the sum over its kernels, its least memory traffic the weights, inputs and outputs).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tvm_compat import (
    prim_func_type,
    relax_expr_kind,
    relax_function_result,
    relax_function_type,
    tensor_shape_dtype,
    tvm,
)


def kernel_calls(mod: Any) -> dict[str, int]:
    """How often the Relax functions of ``mod`` call each of its PrimFuncs."""
    prims = {gv.name_hint for gv, f in mod.functions_items() if isinstance(f, prim_func_type())}
    calls = dict.fromkeys(sorted(prims), 0)

    def visit(expr: Any) -> None:
        if relax_expr_kind(expr) == "global" and expr.name_hint in calls:
            calls[expr.name_hint] += 1

    for _, func in mod.functions_items():
        if isinstance(func, relax_function_type()):
            tvm().relax.analysis.post_order_visit(func.body, visit)
    return calls


def calls_externs(mod: Any) -> bool:
    """True when a Relax function of ``mod`` calls a function outside it (``call_dps_packed``
    of a registered function): work no FLOP count of its kernels can see."""
    found = False

    def visit(expr: Any) -> None:
        nonlocal found
        found = found or relax_expr_kind(expr) == "extern"

    for _, func in mod.functions_items():
        if isinstance(func, relax_function_type()):
            tvm().relax.analysis.post_order_visit(func.body, visit)
    return found


def _tensor_size(expr: Any) -> tuple[int, int]:
    """Elements and bytes of a tensor-typed expression (``(0, 0)`` for anything else)."""
    dims, dtype = tensor_shape_dtype(expr)
    if dims is None or dtype is None:
        return 0, 0
    numel = int(np.prod([int(d) for d in dims])) if dims else 1
    return numel, numel * np.dtype(dtype).itemsize


def weights(main: Any, n_inputs: int) -> tuple[int, int]:
    """Count and bytes of the weights: constants in ``main``, or its parameters after the inputs."""
    count = size = 0

    def add(expr: Any) -> None:
        nonlocal count, size
        n, b = _tensor_size(expr)
        count, size = count + n, size + b

    def visit(expr: Any) -> None:
        if relax_expr_kind(expr) == "const":
            add(expr)

    tvm().relax.analysis.post_order_visit(main.body, visit)
    for var in list(main.params)[n_inputs:]:
        add(var)
    return count, size


def main_bytes(main: Any) -> int | None:
    """Bytes ``main`` must touch at least: its parameters, its constants and its result (``None``
    when a shape is symbolic)."""
    try:
        _, size = weights(main, 0)
        return size + _tensor_size(relax_function_result(main))[1] or None
    except (TypeError, ValueError):  # a symbolic size such as n
        return None
