"""References: a NumPy expression over parameter names, a callable, a module, or arrays.

The same expression also runs with PyTorch tensors (``np.maximum`` -> ``torch.maximum``), so
``%mlc_time`` can put NumPy and PyTorch rows next to the TVM variants.
"""

from __future__ import annotations

import inspect
import sys
from typing import Any

import numpy as np

from ..compilation import build_module, is_gpu_target
from ..compilation.cached_build import Built
from ..compilation.signatures import as_module, gpu_bound_functions, unbound_gpu_functions
from ..errors import TimingError
from ..tvm_compat import ir_module_type, is_array, is_tvm_object, prim_func_type


class _TorchAsNumpy:
    """``np.<name>`` spelled with torch functions, for evaluating a NumPy expression on tensors."""

    def __getattr__(self, name: str) -> Any:
        import torch  # deferred: optional, and slow to import

        if name in ("maximum", "minimum"):
            op = getattr(torch, name)

            def binary(a: Any, b: Any) -> Any:
                a = a if isinstance(a, torch.Tensor) else torch.tensor(a, dtype=b.dtype)
                b = b if isinstance(b, torch.Tensor) else torch.tensor(b, dtype=a.dtype)
                return op(a, b)

            return binary
        if name == "dot":
            return torch.matmul
        return getattr(torch, name)


def expression_function(expr: str, names: list[str], namespace: dict[str, Any] | None, lib: str):
    """A function of the inputs (by position) that evaluates ``expr`` with NumPy or PyTorch."""
    try:
        code = compile(expr, "<ref>", "eval")
    except SyntaxError as err:
        raise TimingError(f"cannot read --ref {expr!r}: {err.msg}") from None
    base = dict(namespace or {})
    if lib == "torch":
        base.update(np=_TorchAsNumpy(), numpy=_TorchAsNumpy())
    else:
        base.update(np=np, numpy=np)

    def run(*inputs: Any) -> Any:
        scope = dict(base)
        scope.update(zip(names, inputs, strict=False))
        return eval(code, scope)  # noqa: S307 - the user's own expression, in their kernel

    return run


def reference_outputs(
    ref: Any, inputs: list[Any], sig: Any, target: Any, namespace: dict[str, Any] | None
) -> list[Any] | None:
    """The expected outputs (NumPy) of the function for ``inputs``, or ``None`` without a ref."""
    if ref is None:
        return None
    names = [p.name for p in sig.inputs]
    try:
        if isinstance(ref, str):
            value = expression_function(ref, names, namespace, "numpy")(*inputs)
        elif isinstance(ref, Built) or (
            is_tvm_object(ref) and isinstance(ref, (ir_module_type(), prim_func_type()))
        ):
            built = ref if isinstance(ref, Built) else build_module(ref, _built_for(ref, target))
            value = built[sig.name if sig.name in built.signatures else None](*inputs)
        elif is_torch_module(ref):
            value = torch_call(ref, inputs)
        elif callable(ref):
            value = ref(*inputs)
        else:
            value = ref
    except TimingError:
        raise
    except Exception as err:  # noqa: BLE001 - a failing reference is the user's to fix
        raise TimingError(f"the reference failed: {type(err).__name__}: {err}") from None
    return as_arrays(value)


def _built_for(ref: Any, target: Any) -> Any:
    """The target a TVM module given as the reference is built for: ``target``, but this CPU for
    TIR bound to no GPU thread (the kernel a tuning or a trace started from), which a GPU build
    refuses and which computes the same outputs here."""
    if target is None or not is_gpu_target(target):
        return target
    mod = as_module(ref)
    return None if unbound_gpu_functions(mod) and not gpu_bound_functions(mod) else target


def as_arrays(value: Any) -> list[Any]:
    """Every output in ``value`` as a NumPy array, nested tuples and lists flattened in order.

    Takes TVM tensors, the ``Array`` a Relax function returns for a tuple, PyTorch tensors and
    NumPy arrays.
    """
    if isinstance(value, (tuple, list)) or is_array(value):
        return [array for item in value for array in as_arrays(item)]
    if hasattr(value, "detach"):
        value = value.detach().cpu()
    return [np.asarray(value.numpy() if hasattr(value, "numpy") else value)]


def is_torch_module(obj: Any) -> bool:
    """True for a ``torch.nn.Module`` (without importing PyTorch when it is not loaded)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.nn.Module)


def model_arity(model: Any, available: int) -> int:
    """How many of ``available`` arguments ``model.forward`` takes (the rest are TVM weights)."""
    try:
        params = inspect.signature(model.forward).parameters.values()
    except (TypeError, ValueError):
        return available
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return available
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return min(available, len(positional))


def torch_inputs(model: Any, inputs: list[Any]) -> list[Any]:
    """``inputs`` as PyTorch tensors, as many as ``model`` takes."""
    import torch  # deferred: optional, and slow to import

    return [torch.as_tensor(x) for x in inputs[: model_arity(model, len(inputs))]]


def torch_call(model: Any, inputs: list[Any]) -> Any:
    """``model`` called on ``inputs`` (NumPy) without recording gradients."""
    import torch  # deferred: optional, and slow to import

    with torch.no_grad():
        return model(*torch_inputs(model, inputs))


def compare(outputs: list[Any], expected: list[Any], names: list[str]) -> str | None:
    """``None`` when every output matches its reference, else what differs."""
    if len(outputs) < len(expected):
        return f"{len(outputs)} output(s), the reference has {len(expected)}"
    if len(names) != len(outputs):  # a tuple of outputs: name them by position
        names = [f"#{i}" for i in range(len(outputs))]
    start = len(outputs) - len(expected)  # a function's final results are its last outputs
    for name, got, want in zip(names[start:], outputs[start:], expected, strict=True):
        if got.shape != want.shape:
            return f"output {name} has shape {got.shape}, the reference {want.shape}"
        if not np.allclose(got, want, rtol=1e-4, atol=1e-4, equal_nan=True):
            err = float(np.max(np.abs(got.astype("float64") - want.astype("float64"))))
            return f"output {name} differs from the reference (max abs error {err:.3g})"
    return None
