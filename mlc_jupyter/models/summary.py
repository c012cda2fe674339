"""What an imported model holds: operators, weights, inputs and outputs, the kernels a build makes."""

from __future__ import annotations

from typing import Any

from ..compilation import resolve_target
from ..compilation.default_schedule import Progress, operator_counts, prepare_model
from ..compilation.model_costs import kernel_calls, weights
from ..results import ModelSummary
from ..tvm_compat import (
    expr_type,
    relax_function_result,
)


def _describe(expr: Any) -> str:
    """``(1, 3, 224, 224) float32`` for a tensor-typed expression; tuples list their fields."""
    fields = getattr(expr_type(expr), "fields", None)
    if fields is not None:
        return "(" + ", ".join(_describe_type(f) for f in fields) + ")"
    return _describe_type(expr_type(expr))


def _describe_type(ty: Any) -> str:
    shape = getattr(ty, "shape", None)
    dims = ", ".join(_dim(d) for d in shape) if shape is not None else "?"
    return f"({dims}) {getattr(ty, 'dtype', '')}".strip()


def _dim(dim: Any) -> str:
    try:
        return str(int(dim))
    except (TypeError, ValueError):  # a symbolic size such as n
        return str(dim)


def summarize(
    mod: Any, n_inputs: int, target: Any = None, on_progress: Progress | None = None
) -> ModelSummary:
    """Operators of ``main``, its weights, and the kernels a build for ``target`` makes.

    Listing the kernels legalises, fuses and schedules the model, which a build of the same
    module for the same target then reuses.
    """
    main = mod["main"]
    ops = sorted(operator_counts(mod).items(), key=lambda kv: (-kv[1], kv[0]))
    count, size = weights(main, n_inputs)
    prepared = prepare_model(mod, resolve_target(target), on_progress)  # the build reuses it
    made = set(prepared.scheduled) | set(prepared.unscheduled)
    calls = kernel_calls(prepared.mod)
    kernels = sorted(((k, n) for k, n in calls.items() if k in made and n), key=lambda kv: kv[0])
    return ModelSummary(
        ops=tuple((name.removeprefix("relax."), n) for name, n in ops),
        n_params=count,
        param_bytes=size,
        kernels=tuple(kernels),
        inputs=tuple(_describe(v) for v in list(main.params)[:n_inputs]),
        outputs=(_describe(relax_function_result(main)),),
    )
