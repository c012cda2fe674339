"""An activation between two reshapes that undo each other is computed on the tensor itself.

An imported ``nn.Linear`` on a 3-D input is a reshape to 2-D, the matmul and bias, and a reshape
back; a transformer's feed-forward block is then ``reshape(relu(reshape(y, (1, n, f))), (n, f))``
between its two dense layers. TVM's ``FuseOps`` fuses an elementwise epilogue into a matmul but
not across a reshape, so the activation became a kernel of its own that read and wrote the whole
hidden tensor. Where the outer reshape gives back ``y``'s own shape, the chain is the activation
of ``y`` (an elementwise function commutes with a reshape), which fuses into the matmul's
write-back. The pass takes and returns a Relax ``IRModule``.
"""

from __future__ import annotations

from typing import Any

from ..tvm_compat import structural_equal, tvm

#: Elementwise operators of one tensor argument that the rewrite moves inside the reshapes.
ELEMENTWISE = (
    "relax.nn.relu",
    "relax.nn.gelu",
    "relax.nn.gelu_tanh",
    "relax.nn.silu",
    "relax.sigmoid",
    "relax.tanh",
)


def sink_reshapes(mod: Any) -> Any:
    """``mod`` with each ``reshape(f(reshape(y, s)), shape of y)`` of an :data:`ELEMENTWISE`
    ``f`` replaced by ``f(y)``."""
    relax = tvm().relax
    dpl = relax.dpl
    inner, shape, outer_shape = dpl.wildcard(), dpl.wildcard(), dpl.wildcard()
    reshaped = dpl.is_op("relax.reshape")(inner, shape)
    activation = dpl.is_op(ELEMENTWISE[0])(reshaped)
    for name in ELEMENTWISE[1:]:
        activation = activation | dpl.is_op(name)(reshaped)
    pattern = dpl.is_op("relax.reshape")(activation, outer_shape)

    def rewrite(expr: Any, matches: Any) -> Any:
        value = matches[inner]
        own = getattr(getattr(value, "ty", None), "shape", None)
        if own is None or not structural_equal(own, matches[outer_shape]):
            return expr
        call = matches[activation]
        return relax.Call(call.op, [value], call.attrs)

    out = mod.clone()
    for gv, func in mod.functions_items():
        if isinstance(func, relax.Function):
            out[gv] = dpl.rewrite_call(pattern, rewrite, func)
    return out
