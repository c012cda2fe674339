"""Checked builds: kernels that check every buffer index at run time before they use it, for
what the static check (:mod:`.bounds`) cannot decide (data-dependent indices such as
``A[idx[i]]``). An out-of-bounds index raises ``RuntimeError`` instead of touching memory.

An access through a view of another buffer's memory (``T.decl_buffer(shape, data=B.data)``) is
checked against the memory it views, not the shape the view declares: a view may say it holds
more than ``B`` does, and only ``B``'s allocation is memory the kernel may touch.
"""

from __future__ import annotations

import functools
from typing import Any

from ..tvm_compat import (
    DISABLE_VECTORIZE_OPTION,
    element_bytes,
    instrument_bound_checkers,
    prim_func_type,
    register_tir_pipeline,
    tir,
    tvm,
)
from ..tvm_compat import (
    compile as tvm_compile,
)
from .tir_walk import buffer_accesses, buffer_views, viewed_allocation

_BOUND_CHECKED_PIPELINE = "mlc_bound_checked"


@functools.cache
def bound_checked_pipeline() -> str:
    """The name of a TIR pipeline whose kernels check every buffer index before they use it.

    TVM 0.27's ``instrument_bound_checkers`` option is inert: its pass instruments only buffers
    announced by a ``buffer_bound`` attribute, and nothing in the TensorIR lowering announces
    any (``StorageFlatten`` did, before ``FlattenBuffer`` replaced it). This pipeline runs the
    default lowering, announces every flattened buffer that is loaded or stored, then runs the
    pass.
    """
    _tvm = tvm()

    @_tvm.transform.module_pass(opt_level=0, name="mlc.AnnounceBufferBounds")
    def announce(mod: Any, _ctx: Any) -> Any:
        functions = {}
        for gvar, func in mod.functions_items():
            if isinstance(func, prim_func_type()):
                func = func.with_body(_announce_buffers(func.body))
            functions[gvar] = func
        return _tvm.IRModule(functions, attrs=mod.attrs)

    register_tir_pipeline(_BOUND_CHECKED_PIPELINE, lambda: [announce, instrument_bound_checkers()])
    return _BOUND_CHECKED_PIPELINE


def _announce_buffers(body: Any) -> Any:
    """``body`` inside one ``buffer_bound`` attribute per buffer accessed with as many indices as
    it has dimensions (the pass compares index and dimension counts); a flat view of another
    buffer's memory is announced with the size of that memory."""
    _tir = tir()
    views = buffer_views(body)
    shapes: dict[Any, Any] = {}
    mismatched: set[Any] = set()
    for buffer, indices, _, _ in buffer_accesses(body):
        if len(indices) != len(buffer.shape):
            mismatched.add(buffer)
        if buffer not in shapes:
            owner = viewed_allocation(buffer, views)
            flat = len(buffer.shape) == 1 and not owner.same_as(buffer)
            shapes[buffer] = (allocation_extent(owner, buffer.dtype),) if flat else buffer.shape
    for buffer, shape in shapes.items():
        if buffer not in mismatched and len(shape):
            body = _tir.AttrStmt(buffer, "buffer_bound", _tir.op.tvm_tuple(*shape), body)
    return body


def allocation_extent(owner: Any, dtype: Any) -> Any:
    """How many elements of ``dtype`` fit in ``owner``'s memory (its shape's product, rescaled
    when a view reads it as another dtype)."""
    _tir = tir()
    mine, theirs = element_bytes(dtype), element_bytes(owner.dtype)
    if all(isinstance(d, _tir.IntImm) for d in owner.shape):
        elements = functools.reduce(lambda a, b: a * b, [int(d) for d in owner.shape], 1)
        return _tir.const(elements * theirs // mine, "int64")
    size = functools.reduce(lambda a, b: a * b, [_tir.Cast("int64", d) for d in owner.shape])
    return size if mine == theirs else _tir.floordiv(size * theirs, mine)


def compile_checked(mod: Any, target: Any) -> Any:
    """Build like :func:`~mlc_jupyter.tvm_compat.compile`, with every buffer index checked at
    run time (CPU targets).

    Loops are not vectorized: the pass checks a vector access ``A[base:base + n]`` against
    ``base + n`` rather than its last element ``base + n - 1``, and would stop a kernel that
    writes the last vector of a buffer.
    """
    with tvm().transform.PassContext(config={DISABLE_VECTORIZE_OPTION: True}):
        return tvm_compile(mod, target, tir_pipeline=bound_checked_pipeline())
