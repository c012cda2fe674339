"""Relax: function classes, passes and named pipelines, expression kinds and types, bindings,
variable names, and the PyTorch frontends."""

from __future__ import annotations

import hashlib
from types import ModuleType
from typing import Any

import numpy as np

from .namespaces import structural_map, tvm


def relax_function_type() -> type:
    """The Relax function class (``relax.Function``)."""
    return tvm().relax.Function


def pass_type() -> type:
    """The base class of every module-level pass (``tvm.transform.Pass``)."""
    return tvm().transform.Pass


def is_expr_mutator(obj: Any) -> bool:
    """True for an instance of a ``@relax.expr_functor.mutator`` class (the book's rewriters)."""
    from tvm.relax.expr_functor import _PyExprMutator

    return isinstance(obj, _PyExprMutator)


def is_expr_mutator_class(obj: Any) -> bool:
    """True for a class decorated with ``@relax.expr_functor.mutator`` (not yet instantiated)."""
    from tvm.relax.expr_functor import _PyExprMutator

    return isinstance(obj, type) and issubclass(obj, _PyExprMutator)


def relax_pipeline_names() -> list[str]:
    """Named Relax pipelines: TVM's registered ones plus ``target`` (fusion for the target)."""
    from tvm.relax.pipeline import PIPELINE_MAP

    return [*sorted(n for n in PIPELINE_MAP if n != "static_shape_tuning"), "target"]


def relax_pipeline(name: str, target: Any) -> Any:
    """The pass of pipeline ``name``: ``default`` is what ``tvm.compile`` runs on a CPU (no
    fusion); ``target`` is ``relax.get_default_pipeline(target)`` (legalize, FuseOps, FuseTIR)."""
    relax = tvm().relax
    if name == "target":
        return relax.get_default_pipeline(target)
    return relax.get_pipeline(name)


def relax_expr_kind(expr: Any) -> str:
    """What a Relax expression is, in one word: ``call``, ``const``, ``tuple``, ``item`` (a tuple
    element), ``var``, ``global`` (a GlobalVar), ``extern``, ``op`` or ``other``."""
    _tvm = tvm()
    relax, ir = _tvm.relax, _tvm.ir
    kinds = (
        (relax.Call, "call"), (ir.expr.Constant, "const"), (relax.Tuple, "tuple"),
        (relax.TupleGetItem, "item"), (relax.Var, "var"), (ir.GlobalVar, "global"),
        (relax.ExternFunc, "extern"), (ir.Op, "op"),
    )  # fmt: skip
    for cls, kind in kinds:
        if isinstance(expr, cls):
            return kind
    return "other"


def expr_type(expr: Any) -> Any:
    """The type a Relax expression carries (``struct_info`` in the course, ``ty`` in 0.27)."""
    return getattr(expr, "ty", None)


def tensor_shape_dtype(expr: Any) -> tuple[tuple[str, ...] | None, str | None]:
    """``((1, 784), "float32")`` for a tensor-typed expression, ``(None, None)`` otherwise."""
    ty = expr_type(expr)
    shape = getattr(ty, "shape", None)
    if ty is None or not hasattr(ty, "dtype"):
        return None, None

    def dim(d: Any) -> str:
        try:
            return str(int(d))
        except (TypeError, ValueError):  # a symbolic size such as n
            return str(d)

    dims = tuple(dim(d) for d in shape) if shape is not None else None
    return dims, str(ty.dtype)


def relax_bindings(func: Any) -> list[tuple[Any, Any]]:
    """``(var, value)`` of every binding in the top-level blocks of a Relax function."""
    body = func.body
    out = []
    for block in getattr(body, "blocks", ()):
        for binding in block.bindings:
            out.append((binding.var, binding.value))
    return out


def relax_function_result(func: Any) -> Any:
    """The expression a Relax function returns (the ``SeqExpr``'s body)."""
    return getattr(func.body, "body", func.body)


def var_name(var: Any) -> str:
    """A Relax variable's name (``name_hint`` in the course, ``name`` in 0.27)."""
    name = getattr(var, "name", None)
    return str(name if name is not None else var.name_hint)


def one_call_module(call: Any) -> Any:
    """A Relax module whose ``main`` takes ``call``'s first argument as its parameter and
    returns ``call`` (its other arguments, constants, kept): one operator to build alone."""
    relax = tvm().relax
    data = relax.Var("data", expr_type(call.args[0]))
    builder = relax.BlockBuilder()
    with builder.function("main", [data]):
        with builder.dataflow():
            out = builder.emit_output(call_with_args(call, [data, *call.args[1:]]))
        builder.emit_func_output(out)
    return builder.get()


def torch_frontend() -> ModuleType:
    """TVM's PyTorch importers: ``from_exported_program`` and ``from_fx``."""
    tvm()
    from tvm.relax.frontend import torch as frontend

    return frontend


def detach_params(mod: Any) -> tuple[Any, list[Any]]:
    """``mod`` without the weights an importer attached to ``main``, and those weights."""
    tvm()
    from tvm.relax.frontend import detach_params as _detach

    detached, params = _detach(mod)
    return detached, list(params.get("main", []))


def bind_inputs(mod: Any, values: dict[int, Any]) -> Any:
    """``mod`` with the parameters of ``main`` at the given indices bound to constants."""
    _tvm = tvm()
    params = list(mod["main"].params)
    binding = {params[index]: _tvm.runtime.tensor(value) for index, value in values.items()}
    return _tvm.relax.transform.BindParams("main", binding)(mod)


def constant_array(expr: Any) -> Any:
    """A Relax tensor constant's value as a NumPy array, ``None`` for any other expression (0.27
    names the node ``ir.GenericConst`` and its tensor ``.value``; before, ``relax.Constant`` and
    ``.data``)."""
    generic = getattr(tvm().ir, "GenericConst", None)
    if generic is not None and isinstance(expr, generic):
        value = expr.value
    elif isinstance(expr, getattr(tvm().relax, "Constant", ())):
        value = expr.data
    else:
        return None
    return value.numpy() if hasattr(value, "numpy") else None


def call_with_args(call: Any, args: list[Any]) -> Any:
    """The Relax call ``call`` with other arguments, its operator and attributes kept (0.27's
    ``ir.Call`` takes ``ty_args``; before, ``sinfo_args``)."""
    relax = tvm().relax
    extra = getattr(call, "ty_args", None)
    if extra is None:
        extra = getattr(call, "sinfo_args", None)
    return relax.Call(call.op, list(args), call.attrs, list(extra or []))


def constants_as_digests(mod: Any) -> Any:
    """``mod`` with each Relax tensor constant replaced by one holding the SHA-256 of its dtype,
    shape and bytes: a model's structure with its weights named, not held, which is what a
    disk-cache entry keeps to compare on a hit (the weights made most of that text, to write
    after a build and to read back on a hit)."""
    _tvm = tvm()
    node = getattr(_tvm.ir, "GenericConst", None) or _tvm.relax.Constant

    def digest(const: Any) -> Any:
        array = constant_array(const)
        if array is None:
            return const
        sha = hashlib.sha256(f"{array.dtype}{array.shape}".encode())
        sha.update(np.ascontiguousarray(array).data)
        return _tvm.relax.const(np.frombuffer(sha.digest(), dtype=np.uint8))

    return structural_map(mod, node, digest)
