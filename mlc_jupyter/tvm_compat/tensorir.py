"""TensorIR's IR as 0.27 spells it: function attributes, node classes, buffer accesses, fields
by reflection (0.27 has no Python visitor for TIR), the arithmetic analyzer and the FLOP estimate.
Walking a body is :mod:`mlc_jupyter.compilation.tir_walk`'s; out-of-bounds analysis is
:mod:`.out_of_bounds`'s.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

from .namespaces import s_tir, tir, tvm

#: The PrimFunc attribute that promises LLVM its buffers do not alias (``"tir.noalias"`` before).
NOALIAS_ATTR = "tirx.noalias"


#: The attribute MetaSchedule sets on a kernel that is already scheduled (nothing to tune).
IS_SCHEDULED_ATTR = "tirx.is_scheduled"


def buffer_load(expr: Any) -> tuple[Any, list[Any]] | None:
    """``(buffer, indices)`` of a buffer load, else ``None``.

    The course's ``tir.BufferLoad`` (``.buffer``) is an ``ir.TensorLoad`` with ``.source`` in 0.27.
    """
    if isinstance(expr, tvm().ir.TensorLoad):
        return expr.source, list(expr.indices)
    return None


def param_buffers(func: Any) -> list[Any]:
    """The buffers a PrimFunc takes, in order (its ``buffer_map`` values in the course; in 0.27
    its params whose type is a ``BufferType``: a scalar parameter is not one)."""
    buffer_type = tir().BufferType
    return [p for p in func.params if isinstance(getattr(p, "ty", None), buffer_type)]


def is_scalar_param(var: Any) -> bool:
    """True for a scalar parameter (``n: T.int32`` of a PrimFunc, ``R.Prim("int64")`` of a Relax
    function): its type is a ``PrimType``, with a dtype (:func:`var_dtype`) and no shape."""
    return isinstance(getattr(var, "ty", None), tvm().ir.PrimType)


def var_dtype(var: Any) -> str:
    """The dtype of a scalar variable (``var.dtype`` in the course; its ``ty`` in 0.27)."""
    return str(var.ty)


def specialize_scalars(func: Any, values: dict[str, int | float | bool]) -> Any:
    """``func`` with each named scalar parameter replaced by its value, written into the body as
    a constant of the parameter's dtype (the parameter is gone from the signature)."""
    by_name = {p.name: p for p in func.params if is_scalar_param(p)}
    return func.specialize(
        {by_name[n]: tir().const(v, var_dtype(by_name[n])) for n, v in values.items()}
    )


def region_buffer(region: Any) -> Any:
    """The buffer of a block's read or write region (``.buffer`` in the course, ``.source`` now)."""
    return region.source


def tir_nodes() -> SimpleNamespace:
    """TensorIR's node classes under version-neutral names, for walking a PrimFunc's body.

    ``For``, ``BlockRealize`` and ``Block`` (``SBlockRealize``, ``SBlock`` in 0.27), ``IfThenElse``,
    ``LetStmt``, ``Stmt``; expressions ``Var``, ``IntImm``, ``Not``, ``Call`` (``tvm.ir.Call`` in
    0.27, which ``T.if_then_else`` and ``T.likely`` make); ``Range`` (a loop's, from min and extent).
    """
    t, s, ir = tir(), s_tir(), tvm().ir
    return SimpleNamespace(
        For=t.For, BlockRealize=s.SBlockRealize, Block=s.SBlock, IfThenElse=t.IfThenElse,
        LetStmt=t.LetStmt, Stmt=t.Stmt, Var=t.Var, IntImm=t.IntImm, Not=t.Not, Call=ir.Call,
        Range=ir.Range,
    )  # fmt: skip


#: Type keys of TIR buffer accesses: a store, and a load (``BufferLoad`` became ``TensorLoad``).
_STORE_KEY, _LOAD_KEY = "tirx.BufferStore", "ir.TensorLoad"
#: The op of a ``T.call_extern`` (``tir.call_extern`` before).
CALL_EXTERN_OP = "tirx.call_extern"
#: Ops that call code outside the kernel by name: a C symbol, or a global function of TVM's
#: registry (which holds functions that load libraries and write files).
FOREIGN_CALL_OPS = frozenset(
    f"tirx.{name}"
    for name in (
        "call_extern", "call_pure_extern", "tvm_call_packed",
        "tvm_call_cpacked", "tvm_call_packed_lowered", "tvm_call_cpacked_lowered",
        "tvm_call_trace_packed",
    )
)  # fmt: skip


#: Type keys of ``T.decl_buffer`` and ``T.alloc_buffer``, and the op that reads a buffer's data
#: pointer (``B.data``, a ``Var`` before 0.27).
_DECL_KEY, _ALLOC_KEY, _BUFFER_DATA_OP = "tirx.DeclBuffer", "tirx.AllocBuffer", "tirx.buffer_data"


def buffer_declaration(node: Any) -> tuple[Any, Any | None] | None:
    """``(buffer, viewed)`` when ``node`` declares or allocates a buffer, else None; ``viewed`` is
    the buffer whose data it declares ``buffer`` over (``T.decl_buffer(..., data=B.data)``: ``B``),
    None for a buffer with memory of its own (an allocation, or a parameter's declaration)."""
    info = getattr(type(node), "__tvm_ffi_type_info__", None)
    key = info.type_key if info is not None else ""
    if key == _ALLOC_KEY:
        return node.buffer, None
    if key != _DECL_KEY:
        return None
    data = getattr(node, "data", None)
    if getattr(getattr(data, "op", None), "name", None) == _BUFFER_DATA_OP and len(data.args) == 1:
        return node.buffer, data.args[0]
    return node.buffer, None


def element_bytes(dtype: Any) -> int:
    """Bytes of one element of ``dtype`` (a ``bool`` takes a byte, as TVM stores it)."""
    parsed = tvm().runtime.DataType(str(dtype))
    return max(int(parsed.bits), 8) * int(parsed.lanes) // 8


def is_ir_node(obj: Any) -> bool:
    """True for a TVM object whose fields reflection can list (see :func:`node_fields`)."""
    return hasattr(type(obj), "__tvm_ffi_type_info__")


def is_ir_array(obj: Any) -> bool:
    """True for an FFI ``Array`` or ``List`` of IR nodes (a ``SeqStmt``'s ``seq`` ...)."""
    return type(obj).__name__ in ("Array", "List")


def node_fields(node: Any) -> Iterator[tuple[str, Any]]:
    """The reflected fields of a TVM object, base classes included.

    TVM 0.27 has no Python statement/expression visitor for TIR; reflection reaches every node.
    """
    info = getattr(type(node), "__tvm_ffi_type_info__", None)
    while info is not None:
        for field in info.fields:
            yield field.name, getattr(node, field.name)
        info = info.parent_type_info


def buffer_access(node: Any) -> tuple[Any, Any, bool] | None:
    """``(buffer, indices, is_store)`` when ``node`` stores to or loads from a buffer, else None."""
    info = getattr(type(node), "__tvm_ffi_type_info__", None)
    key = info.type_key if info is not None else ""
    if key == _STORE_KEY:
        return node.buffer, node.indices, True
    if key == _LOAD_KEY:
        return node.source, node.indices, False
    return None


def analyzer() -> Any:
    """A fresh arithmetic analyzer (``tvm.sym.Analyzer``; ``tvm.arith.Analyzer`` before 0.27)."""
    return tvm().sym.Analyzer()


def estimate_tir_flops(mod: Any) -> float:
    """TVM's FLOP estimate of a TensorIR module (raises for what it cannot count)."""
    return float(s_tir().analysis.estimate_tir_flops(mod))


def anchor_block(mod: Any) -> Any | None:
    """The anchor block of a one-kernel module: the block with an init statement (its
    reduction; the largest by FLOPs when several have one), as MetaSchedule's "anchor-block"
    module equality finds it; ``None`` when no block reduces."""
    return s_tir().analysis.find_anchor_sblock(mod)


def tensor_intrin_class() -> Any:
    """The tensor intrinsic class (``tvm.tir.TensorIntrin`` in the course)."""
    return s_tir().TensorIntrin


def with_parameters(func: Any, buffers: list[Any]) -> Any:
    """``func`` taking exactly ``buffers`` (its buffer parameters or root-block buffers, in this
    order); its other buffer parameters become buffers of its root block (``T.alloc_buffer`` in
    the course, ``T.sblock_alloc_buffer`` in 0.27), as a TE schedule lowered with some of its
    tensors as arguments allocated the rest."""
    s = s_tir()
    realize = func.body
    root = realize.block

    def listed(var: Any) -> bool:
        return any(var.same_as(b) for b in buffers)

    known = [*func.params, *root.alloc_buffers]
    missing = [b for b in buffers if not any(b.same_as(k) for k in known)]
    if missing:
        raise ValueError(f"{', '.join(str(b.name) for b in missing)} not in {func}")
    allocated = [b for b in root.alloc_buffers if not listed(b)]
    allocated += [p for p in func.params if not listed(p)]
    block = s.SBlock(
        root.iter_vars, root.reads, root.writes, root.name_hint, root.body, root.init,
        allocated, root.match_buffers, root.annotations, root.span,
    )  # fmt: skip
    body = s.SBlockRealize(realize.iter_values, realize.predicate, block, realize.span)
    return tir().PrimFunc(list(buffers), body, func.ret_type, func.attrs, func.span)


def iter_var_type() -> type:
    """The class of a loop variable with its range (``te``'s ``op.axis``, ``te.thread_axis``)."""
    return tir().IterVar
