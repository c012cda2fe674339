"""TIR lowering: pipelines registered by name for ``tvm.compile``, the pass that keeps a CPU
kernel's register tiles in registers, the run-time bound checks and the message they raise, and
the PassContext option that keeps loops scalar."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from .namespaces import s_tir, structural_map, tir, tvm
from .prefetch import prefetch_next_panels
from .tensorir import element_bytes

#: The name of TVM's default TensorIR lowering (``"default"`` before 0.27).
_DEFAULT_TIR_PIPELINE = "s_tir"
#: The PassContext option that keeps loops from being vectorized (``tir.disable_vectorize``).
DISABLE_VECTORIZE_OPTION = "tirx.disable_vectorize"


def register_tir_pipeline(
    name: str,
    extra_passes: Callable[[], list[Any]],
    first_passes: Callable[[], list[Any]] = list,
    tir_cse: bool = True,
) -> None:
    """Register the TIR pipeline ``name``: the passes ``first_passes()`` returns (on the scheduled
    TensorIR), TVM's default lowering (without its common-subexpression elimination when
    ``tir_cse`` is false: :func:`_without_tir_cse`), then the passes ``extra_passes()`` returns
    (both called each time a build asks for the pipeline)."""
    _tvm = tvm()
    from tvm.tirx import compilation_pipeline

    def factory() -> Any:
        lower, finalize_host, finalize_device = compilation_pipeline.get_tir_pipeline(
            _DEFAULT_TIR_PIPELINE
        )
        passes = [*first_passes(), lower if tir_cse else _without_tir_cse(lower), *extra_passes()]
        return _tvm.transform.Sequential(passes), finalize_host, finalize_device

    compilation_pipeline.register_tir_pipeline(name, factory)


#: The PassContext option that leaves common-subexpression elimination out of TVM's lowering.
_DISABLE_TIR_CSE_OPTION = "tirx.disable_cse_tir"


def _without_tir_cse(lower: Any) -> Any:
    """A pass: ``lower`` (TVM's TIR lowering) without its common-subexpression elimination, in
    the caller's PassContext otherwise. LLVM removes the same subexpressions (they hold no loads
    and no calls); on a model's unrolled kernels TVM's pass was the slowest step of the lowering
    (``bench/results/bench_build_time_models_*``)."""
    _tvm = tvm()

    @_tvm.transform.module_pass(opt_level=0, name="mlc.LowerWithoutTirCSE")
    def run(mod: Any, ctx: Any) -> Any:
        config = {str(key): value for key, value in ctx.config.items()}
        config[_DISABLE_TIR_CSE_OPTION] = True
        with _tvm.transform.PassContext(
            opt_level=ctx.opt_level,
            required_pass=list(ctx.required_pass),
            disabled_pass=list(ctx.disabled_pass),
            config=config,
        ):
            return lower(mod)

    return run


#: The largest ``local`` buffer :func:`locals_on_stack` keeps on a kernel's stack: a register
#: tile of accumulators (32 vector registers of 64 bytes) with room to spare.
STACK_LOCAL_BYTES = 4096
#: The annotation that makes ``LowerTVMBuiltin`` leave an allocation as it is (an ``alloca``).
_KEEP_ALLOCATION = "disable_lower_builtin"
_REGISTER_TILES_PIPELINE = "mlc_register_tiles"


def locals_on_stack() -> Any:
    """A pass: each ``local`` buffer of constant size up to :data:`STACK_LOCAL_BYTES` stays a
    stack allocation, which LLVM promotes to registers.

    ``LowerTVMBuiltin`` keeps only ``global`` buffers under 1 KiB on a CPU kernel's stack; a
    ``local`` one, the accumulators of a register tile (``cache_write(block, 0, "local")``), got a
    workspace from ``TVMBackendAllocWorkspace`` at every tile, cleared by ``memset`` and written
    back to memory after the tile, none of which LLVM may remove. A depthwise convolution's tile
    is short, and paid most (``bench/bench_register_tiles.py``)."""
    _tvm = tvm()
    nodes = tir()

    def keep(alloc: Any) -> Any:
        buffer = alloc.buffer
        if buffer.scope() != "local" or not all(isinstance(n, nodes.IntImm) for n in buffer.shape):
            return alloc
        size = element_bytes(buffer.dtype)
        for extent in buffer.shape:
            size *= int(extent)
        if size > STACK_LOCAL_BYTES:
            return alloc
        annotations = dict(alloc.annotations) if alloc.annotations else {}
        annotations[_KEEP_ALLOCATION] = nodes.IntImm("int32", 1)
        return nodes.AllocBuffer(buffer, annotations=annotations)

    @_tvm.transform.module_pass(opt_level=0, name="mlc.LocalsOnStack")
    def on_stack(mod: Any, _ctx: Any) -> Any:
        return structural_map(mod, nodes.AllocBuffer, keep)

    return on_stack


@functools.cache
def register_tiles_pipeline() -> str:
    """The name of TVM's default TIR lowering, without its common-subexpression elimination
    (LLVM's does it), followed by :func:`locals_on_stack` (a CPU kernel's register tile stays in
    registers), after :func:`.prefetch.prefetch_next_panels` (a kernel's streamed weight panels
    prefetched where its schedule asks)."""
    register_tir_pipeline(
        _REGISTER_TILES_PIPELINE,
        lambda: [locals_on_stack()],
        lambda: [prefetch_next_panels()],
        tir_cse=False,
    )
    return _REGISTER_TILES_PIPELINE


def instrument_bound_checkers() -> Any:
    """TVM's pass that checks, at run time, every index into a buffer announced by a
    ``buffer_bound`` attribute (the failure raises with :data:`BOUND_CHECK_MESSAGE`)."""
    return s_tir().transform.InstrumentBoundCheckers()


#: What a bound-checked kernel raises (``RuntimeError``) when an index leaves its buffer.
BOUND_CHECK_MESSAGE = "OUT OF THE BOUNDS"
