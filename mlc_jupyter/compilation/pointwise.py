"""1x1 convolutions on CPUs as the matrix products they are.

A 1x1 stride-1 NHWC convolution is ``[pixels, C] x [C, K]``: every pixel's channels times the
weight. Legalised as a convolution, it gets the direct-convolution schedule
(:mod:`.conv_schedule`), whose register tile runs over one row's pixels and reads the weight with
a row stride of ``K``; legalised here as a contraction over the channels with the weight as a
``[C, K]`` matrix, it is matmul-like, and the default build gives it the BLIS micro-kernel of
:mod:`.matmul_schedule` (its tile over all the image's pixels, the weight packed in panels at
build time), which ran faster on each of MobileNet's pointwise shapes
(``bench/bench_pointwise.py``). The tuner then searches it in the matmul space.

This module imports TVM at import time; import it lazily.
"""

from __future__ import annotations

from typing import Any

from ..tvm_compat import constant_array, tvm

#: The kernel's name (``fused_conv2d_pointwise…`` once fused with its epilogue).
NAME = "conv2d_pointwise"


def is_pointwise(call: Any, lanes: int) -> bool:
    """Whether a Relax ``conv2d`` call is a 1x1 stride-1 convolution without padding, NHWC with
    a constant HWIO weight, ungrouped, whose output channels fill vectors of ``lanes``."""
    attrs = call.attrs
    layouts = (str(attrs.data_layout), str(attrs.kernel_layout), str(attrs.out_layout))
    if layouts != ("NHWC", "HWIO", "NHWC") or int(attrs.groups) != 1:
        return False
    if [int(s) for s in attrs.strides] != [1, 1] or any(int(p) for p in attrs.padding):
        return False
    weight = constant_array(call.args[1])
    if weight is None or weight.shape[:2] != (1, 1) or weight.shape[3] % lanes:
        return False
    out_dtype = str(attrs.out_dtype)
    return out_dtype in ("", str(weight.dtype)) and str(call.args[0].ty.dtype) == str(weight.dtype)


def legalize(call: Any, bb: Any) -> Any:
    """``call`` (a :func:`is_pointwise` conv2d) as a contraction with its ``[C, K]`` weight."""
    weight = constant_array(call.args[1])
    matrix = weight.reshape(weight.shape[2], weight.shape[3])
    return bb.call_te(
        pointwise_compute,
        call.args[0],
        tvm().relax.const(matrix),
        primfunc_name_hint=NAME,
        primfunc_attrs={"op_pattern": 4},  # output-elementwise fusable: the epilogue fuses
    )


def pointwise_compute(data: Any, weight: Any) -> Any:
    """The TE computation ``out[b, y, x, k] = sum_c data[b, y, x, c] * weight[c, k]``."""
    te = tvm().te
    batch, height, width, channels = data.shape
    channel = te.reduce_axis((0, channels), name="rc")
    return te.compute(
        (batch, height, width, weight.shape[1]),
        lambda b, y, x, k: te.sum(data[b, y, x, channel] * weight[channel, k], axis=channel),
        name=NAME,
    )
