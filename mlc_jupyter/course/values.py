"""Small value helpers whose signature changed: ``relax.const`` and structural equality."""

from __future__ import annotations

from typing import Any

from .. import tvm_compat


def relax_const(value: Any, dtype: Any = None) -> Any:
    """``relax.const(value, dtype)``; ``dtype`` may also be a tensor type, as the book passes
    ``relax.TensorStructInfo(shape, dtype)`` (0.27 wants the dtype string)."""
    relax = tvm_compat.tvm().relax
    if isinstance(dtype, relax.TensorType):
        dtype = str(dtype.dtype)
    return relax.const(value, dtype)


def structural_equal(a: Any, b: Any, map_free_vars: bool = False) -> bool:
    """``tvm.ir.structural_equal`` of older TVMs."""
    return tvm_compat.structural_equal(a, b, map_free_vars)


def structural_hash(obj: Any, map_free_vars: bool = False) -> int:
    """``tvm.ir.structural_hash`` of older TVMs."""
    return tvm_compat.structural_hash(obj)
