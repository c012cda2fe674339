"""A clip (PyTorch's ReLU6, hardtanh) as a maximum and a minimum, so that convolutions keep NHWC
through it.

Relax's ``ConvertLayout`` converts a convolution to the CPU build's NHWC and carries the layout
through the operators it knows the layout rules of; ``R.clip`` is not one of them, so in a
MobileNet v2-style network every ReLU6 was a transpose back to NCHW, the clip, and a transpose to
NHWC again (two kernels of their own that each read and wrote the whole activation). As the
elementwise ``maximum`` and ``minimum`` with scalar constants, which it knows, the layout goes
through, and the two fuse into the convolution's write-back. The pass takes and returns a Relax
``IRModule``.
"""

from __future__ import annotations

from typing import Any

from ..tvm_compat import expr_type, tvm


def clip_as_min_max(mod: Any) -> Any:
    """``mod`` with each ``R.clip(x, low, high)`` of a floating-point tensor replaced by
    ``minimum(maximum(x, low), high)``, the clip's own definition."""
    relax = tvm().relax
    dpl = relax.dpl
    data, low, high = dpl.wildcard(), dpl.wildcard(), dpl.wildcard()
    pattern = dpl.is_op("relax.clip")(data, low, high)

    def rewrite(expr: Any, matches: Any) -> Any:
        dtype = str(getattr(expr_type(matches[data]), "dtype", ""))
        bounds = [_float(matches[low]), _float(matches[high])]
        if not dtype.startswith("float") or None in bounds:
            return expr
        raised = relax.op.maximum(matches[data], relax.const(bounds[0], dtype))
        return relax.op.minimum(raised, relax.const(bounds[1], dtype))

    out = mod.clone()
    for gv, func in mod.functions_items():
        if isinstance(func, relax.Function):
            out[gv] = dpl.rewrite_call(pattern, rewrite, func)
    return out


def _float(bound: Any) -> float | None:
    """A clip bound's value (a ``FloatImm``/``IntImm``, or a ``PrimValue`` of one), else None."""
    value = getattr(bound, "value", bound)
    value = getattr(value, "value", value)
    return float(value) if isinstance(value, int | float) else None
