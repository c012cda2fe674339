"""Registrations that a re-run replaces: packed functions and tensor intrinsics.

TVM refuses a second registration of a name (``tvm.register_global_func`` without
``override=True``, ``TensorIntrin.register`` without ``override=True``), so re-running the book's
cell that defines ``env.linear`` or the ``tmm16`` intrinsic fails on stock TVM. In a course cell
each registration replaces the earlier one.
"""

from __future__ import annotations

from typing import Any

from ..tvm_compat import register_global_func, tensor_intrin_class


def register_func(func_name: Any, f: Any = None, override: bool = True, level: int = 20) -> Any:
    """``tvm.register_func`` of the book: register (or, used as a decorator, return a decorator
    registering) ``f`` under ``func_name``, replacing an earlier registration."""
    if callable(func_name) and f is None:  # @tvm.register_func without a name
        return register_global_func(func_name.__name__, func_name, override=True)
    return register_global_func(func_name, f, override=True)


class _TensorIntrin:
    """``tvm.tir.TensorIntrin`` of the book: ``register`` replaces an intrinsic of the same name."""

    @staticmethod
    def register(name: str, desc: Any, impl: Any, override: bool = True) -> Any:
        return tensor_intrin_class().register(name, desc, impl, override=True)

    def __getattr__(self, name: str) -> Any:
        return getattr(tensor_intrin_class(), name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return tensor_intrin_class()(*args, **kwargs)


TensorIntrin = _TensorIntrin()
