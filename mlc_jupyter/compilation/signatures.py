"""What a module's text says about it: signatures, outputs, GPU bindings, extern symbols.

TVM 0.27 has no Python statement visitor for TensorIR; the printed TVMScript is stable and
complete, so these checks read it.
"""

from __future__ import annotations

import ctypes
import re
from dataclasses import dataclass
from typing import Any

from ..tvm_compat import ir_module_type, is_scalar_param, prim_func_type, tvm, var_dtype

_STORE = re.compile(r"^\s*(\w+)\[[^\n]*\]\s*=(?!=)", re.MULTILINE)
_EXTERN = re.compile(r"T\.call_extern\(\s*\"[^\"]*\",\s*\"(\w+)\"")


@dataclass(frozen=True)
class Param:
    """One parameter of a built function: name, static shape (``None`` when unknown, and for a
    scalar) and dtype. A scalar (``n: T.int32``) takes a Python number, passed through as is."""

    name: str
    shape: tuple[int | None, ...] | None
    dtype: str
    scalar: bool = False

    def describe(self) -> str:
        if self.scalar:
            return f"{self.name}: {self.dtype}"
        dims = ", ".join("?" if d is None else str(d) for d in self.shape or ())
        return f"{self.name}: ({dims}) {self.dtype}"


@dataclass(frozen=True)
class Signature:
    """Parameters of one function and how many of the trailing ones are outputs."""

    name: str
    params: tuple[Param, ...]
    n_outputs: int
    relax: bool = False
    #: Parameters the function's TIR stores into (outputs and in-place inputs).
    written: tuple[str, ...] = ()

    @property
    def inputs(self) -> tuple[Param, ...]:
        return self.params[: len(self.params) - self.n_outputs]

    @property
    def outputs(self) -> tuple[Param, ...]:
        return self.params[len(self.params) - self.n_outputs :]


def _dims(shape: Any) -> tuple[int | None, ...]:
    out: list[int | None] = []
    for dim in shape:
        try:
            out.append(int(dim))
        except (TypeError, ValueError):
            out.append(None)
    return tuple(out)


def _prim_func_param(var: Any) -> Param:
    """A PrimFunc's parameter: a buffer (shape and dtype), a scalar (dtype only) or a pointer."""
    if is_scalar_param(var):
        return Param(var.name, None, var_dtype(var), scalar=True)
    try:
        return Param(var.name, _dims(var.shape), str(var.dtype))
    except AttributeError:  # a raw T.handle: a pointer, an array of unknown shape
        return Param(var.name, None, "")


def as_module(obj: Any) -> Any:
    """An ``IRModule`` for a PrimFunc, a Relax function or a module."""
    _tvm = tvm()
    if isinstance(obj, ir_module_type()):
        return obj
    if isinstance(obj, prim_func_type()):
        name = str((obj.attrs or {}).get("global_symbol", "main")) if obj.attrs else "main"
        return _tvm.IRModule({name: obj.with_attr("global_symbol", name)})
    if isinstance(obj, _tvm.relax.Function):
        return _tvm.IRModule({"main": obj})
    inner = getattr(obj, "mod", None)  # a Schedule, a %mlc_tune or %mlc_trace result
    if inner is not None and inner is not obj:
        return as_module(inner)
    raise TypeError(
        "expected a PrimFunc, an IRModule, a Relax function, a Schedule or a tuning result, "
        f"not {type(obj).__name__}"
    )


def is_relax(mod: Any) -> bool:
    _tvm = tvm()
    return any(isinstance(f, _tvm.relax.Function) for _, f in mod.functions_items())


def signatures(mod: Any) -> dict[str, Signature]:
    """The callable functions of ``mod``: Relax functions if any, else every PrimFunc."""
    _tvm = tvm()
    relax_mode = is_relax(mod)
    found: dict[str, Signature] = {}
    for gvar, func in mod.functions_items():
        name = gvar.name_hint
        if relax_mode and isinstance(func, _tvm.relax.Function):
            params = []
            for var in func.params:
                if is_scalar_param(var):
                    params.append(Param(var.name, None, var_dtype(var), scalar=True))
                    continue
                ty = getattr(var, "ty", None) or getattr(var, "struct_info", None)
                shape = getattr(ty, "shape", None)
                dims = _dims(shape) if shape is not None else None
                params.append(Param(var.name, dims, str(getattr(ty, "dtype", ""))))
            found[name] = Signature(name, tuple(params), 0, relax=True)
        elif not relax_mode and isinstance(func, prim_func_type()):
            params = tuple(_prim_func_param(p) for p in func.params)
            written = set(_STORE.findall(func.script()))
            n_out = 0
            for param in reversed(params):
                if param.name not in written:
                    break
                n_out += 1
            stored = tuple(p.name for p in params if p.name in written)
            found[name] = Signature(name, params, n_out, written=stored)
    return found


def unbound_gpu_functions(mod: Any) -> list[str]:
    """PrimFuncs with loops but no ``blockIdx`` / ``threadIdx`` binding (0.27 builds them on the host)."""
    names = []
    for gvar, func in mod.functions_items():
        if not isinstance(func, prim_func_type()):
            continue
        text = func.script()
        if ("for " in text or "T.grid" in text) and "Idx." not in text:
            names.append(gvar.name_hint)
    return names


def gpu_bound_functions(mod: Any) -> list[str]:
    """PrimFuncs (a Relax module's kernels too) with loops bound to ``blockIdx`` / ``threadIdx``."""
    return [
        gvar.name_hint
        for gvar, func in mod.functions_items()
        if isinstance(func, prim_func_type()) and "Idx." in func.script()
    ]


def extern_symbols(mod: Any) -> set[str]:
    """Symbols named by ``T.call_extern`` that the module does not bring itself."""
    found: set[str] = set()
    for _, func in mod.functions_items():
        if isinstance(func, prim_func_type()):
            text = func.script()
            if "pragma_import" not in text:
                found |= set(_EXTERN.findall(text))
    return found


def missing_symbols(names: set[str]) -> list[str]:
    """Those of ``names`` the running process cannot resolve (the JIT would crash on them)."""
    if not names:
        return []
    process = ctypes.CDLL(None)
    missing = []
    for name in sorted(names):
        try:
            getattr(process, name)
        except AttributeError:
            if tvm().get_global_func(name, allow_missing=True) is None:
                missing.append(name)
    return missing
