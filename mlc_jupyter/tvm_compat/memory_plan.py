"""Where a Relax build's planned tensors lie in their storage, and the Relax build pipeline that
places them.

TVM's ``StaticPlanBlockMemory`` lets tensors whose lives do not overlap share a storage, each
from its first byte. A CPU kernel split between the cores by rows writes the first half of its
output on one core and the second on the other, so with tensors of different sizes in one
storage the byte where the cores' halves meet moves from kernel to kernel: each kernel writes
lines the other core last read or wrote, and pays to take them over, which on a host that places
its cores far apart is a large part of a memory-bound model's time
(``bench/bench_memory_placement.py``). Placed at the middle of their storage instead, every
tensor's halves meet at the storage's middle, and each core keeps its half of every storage.
"""

from __future__ import annotations

from typing import Any

from .namespaces import tvm

#: A placed tensor's offset is a multiple of this (TVM's own alignment of an allocation).
ALIGNMENT = 64


def _static_int(expr: Any) -> int | None:
    value = getattr(expr, "value", None)
    return value if isinstance(value, int) else None


def _bytes(shape: Any, dtype: Any) -> int | None:
    """The size of a tensor of static ``shape`` (a ``ShapeExpr``) and ``dtype`` (a ``DataTypeImm``
    argument), ``None`` when a dimension is symbolic."""
    dims = [_static_int(d) for d in getattr(shape, "values", [None])]
    if any(d is None for d in dims):
        return None
    count = 1
    for d in dims:
        count *= d  # type: ignore[operator]
    return count * tvm().runtime.DataType(str(dtype.value)).bits // 8


def middle_offset(storage_bytes: int, tensor_bytes: int) -> int:
    """The offset that puts a tensor's middle at its storage's middle (rounded down to
    :data:`ALIGNMENT`)."""
    return max(0, (storage_bytes - tensor_bytes) // 2 // ALIGNMENT * ALIGNMENT)


def _placer_class() -> type:
    relax = tvm().relax
    alloc_storage = tvm().ir.Op.get("relax.memory.alloc_storage")
    alloc_tensor = tvm().ir.Op.get("relax.memory.alloc_tensor")

    @relax.expr_functor.mutator
    class TensorsAtTheMiddle(relax.PyExprMutator):
        """Each ``alloc_tensor`` at offset 0 of a smaller tensor than its static storage moved to
        :func:`middle_offset`, then taken as a view with no offset (``ensure_zero_offset``: the
        same bytes on a CPU), since kernels expect their tensors to start where their data
        pointer does."""

        def __init__(self, mod: Any) -> None:
            super().__init__(mod)
            self.sizes: dict[Any, int] = {}

        def visit_var_binding_(self, binding: Any) -> None:
            value = binding.value
            if isinstance(value, relax.Call) and value.op.same_as(alloc_storage):
                shape = value.args[0]
                dims = getattr(shape, "values", [])
                if len(dims) == 1 and _static_int(dims[0]) is not None:
                    self.sizes[binding.var] = _static_int(dims[0])  # type: ignore[assignment]
            elif isinstance(value, relax.Call) and value.op.same_as(alloc_tensor):
                storage, offset, shape, dtype, *rest = value.args
                size, nbytes = self.sizes.get(storage), _bytes(shape, dtype)
                if size is not None and nbytes is not None and _static_int(offset) == 0:
                    middle = middle_offset(size, nbytes)
                    if middle:
                        placed = relax.Call(
                            value.op,
                            [storage, relax.prim_value(middle), shape, dtype, *rest],
                            value.attrs,
                            value.ty_args,
                        )
                        view = self.builder_.emit(placed, "placed")
                        zero = self.builder_.normalize(relax.op.memory.ensure_zero_offset(view))
                        self.builder_.emit_normalized(relax.VarBinding(binding.var, zero))
                        return
            super().visit_var_binding_(binding)

    return TensorsAtTheMiddle


def tensors_at_the_middle() -> Any:
    """The module pass that places each planned tensor at the middle of its storage (run right
    after ``StaticPlanBlockMemory``)."""

    def place(mod: Any, _ctx: Any) -> Any:
        placer = _placer_class()
        out = mod.clone()
        for gv, func in mod.functions_items():
            if isinstance(func, tvm().relax.Function):
                out[gv] = placer(mod).visit_expr(func)
        return out

    return tvm().transform.module_pass(place, opt_level=0, name="TensorsAtTheMiddle")


def build_pipeline(middle: bool = True) -> Any:
    """TVM 0.27's default Relax build pipeline (``relax.get_pipeline("default")``, pass for
    pass), with :func:`tensors_at_the_middle` after the memory plan when ``middle``."""
    _tvm = tvm()
    relax = _tvm.relax
    transform, backend = relax.transform, relax.backend

    def run(mod: Any, _ctx: Any) -> Any:
        passes = [
            backend.DispatchSampling(),
            backend.DispatchSortScan(),
            transform.LegalizeOps(),
            transform.RewriteDataflowReshape(),
            transform.ToNonDataflow(),
            transform.RemovePurityChecking(),
            transform.CallTIRRewrite(),
            transform.StaticPlanBlockMemory(),
            *([tensors_at_the_middle()] if middle else []),
            transform.RewriteCUDAGraph(),
            transform.LowerAllocTensor(),
            transform.KillAfterLastUse(),
            transform.LowerRuntimeBuiltin(),
            transform.ComputePrimValue(),
            transform.VMShapeLower(),
            transform.AttachGlobalSymbol(),
        ]
        return _tvm.transform.Sequential(passes)(mod)

    return _tvm.transform.module_pass(run, opt_level=0, name="BuildWithTensorsAtTheMiddle")
