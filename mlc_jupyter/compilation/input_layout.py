"""A model's input read in its own layout by the first convolution: no transpose kernel before it.

A CPU build converts convolutions to NHWC (Relax's ``ConvertLayout``), which puts a transpose of
the NCHW input before the first convolution: a kernel of its own that reads and writes the whole
image once more. :func:`fold_input_transposes` hands the NCHW tensor to the convolution instead
(``data_layout="NCHW"``, ``out_layout="NHWC"``), and :func:`legalize` computes it as the
transpose followed by TVM's NHWC convolution in one kernel, where the direct-convolution schedule
inlines the transpose into the padding it copies the input into (:mod:`.conv_schedule`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..tvm_compat import tvm

#: The axes of ``permute_dims`` that turn NCHW into NHWC.
NCHW_TO_NHWC = (0, 2, 3, 1)


def fold_input_transposes(mod: Any, keep: Callable[[Any], bool] = lambda call: False) -> Any:
    """``mod`` with each ``conv2d(permute_dims(x, NCHW -> NHWC), w)`` in NHWC given ``x`` itself
    (``data_layout="NCHW"``, ``out_layout="NHWC"``), except the convolutions ``keep`` says stay
    as they are (a CPU build's Winograd kernels, which read NHWC); the transpose stays for its
    other users."""
    relax = tvm().relax
    dpl = relax.dpl
    data, weight = dpl.wildcard(), dpl.wildcard()
    transposed = dpl.is_op("relax.permute_dims")(data)
    conv = dpl.is_op("relax.nn.conv2d")(transposed, weight)

    def rewrite(expr: Any, matches: Any) -> Any:
        call, permute = matches[conv], matches[transposed]
        attrs = call.attrs
        axes = permute.attrs.axes
        if (
            axes is None
            or tuple(int(a) for a in axes) != NCHW_TO_NHWC
            or attrs.data_layout != "NHWC"
            or attrs.out_layout != "NHWC"
            or keep(call)
        ):
            return expr
        return relax.op.nn.conv2d(
            matches[data],
            matches[weight],
            strides=attrs.strides,
            padding=attrs.padding,
            dilation=attrs.dilation,
            groups=attrs.groups,
            data_layout="NCHW",
            kernel_layout=attrs.kernel_layout,
            out_layout="NHWC",
            out_dtype=attrs.out_dtype or None,
        )

    out = mod.clone()
    for gv, func in mod.functions_items():
        if isinstance(func, relax.Function):
            out[gv] = dpl.rewrite_call(conv, rewrite, func)
    return out


def is_folded(call: Any) -> bool:
    """Whether ``call`` (a ``relax.nn.conv2d``) is one :func:`fold_input_transposes` made."""
    return call.attrs.data_layout == "NCHW" and call.attrs.out_layout == "NHWC"


def legalize(bb: Any, call: Any) -> Any:
    """A folded convolution as one kernel: the NCHW -> NHWC transpose, then TVM's convolution."""
    topi = tvm().topi
    attrs = call.attrs
    ints = lambda values: [int(v) for v in values]  # noqa: E731 - TVM's arrays as topi takes them

    def compute(data: Any, weight: Any) -> Any:
        return topi.nn.conv(
            topi.transpose(data, NCHW_TO_NHWC),
            weight,
            stride=ints(attrs.strides),
            padding=ints(attrs.padding),
            dilation=ints(attrs.dilation),
            groups=int(attrs.groups),
            data_layout="NHWC",
            kernel_layout=attrs.kernel_layout,
            out_dtype=attrs.out_dtype or None,
        )

    return bb.call_te(compute, call.args[0], call.args[1], primfunc_name_hint="conv2d")
