"""TensorIR schedules and their traces (``tvm.tir.Schedule`` in the course, ``s_tir`` in 0.27):
the classes, block and loop handles, trace replay, the names 0.27 gave to blocks, and dlight's
rule-based default schedules."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from .namespaces import s_tir, tvm
from .prefetch import PREFETCH_ANNOTATION, PREFETCH_LOCALITY_ANNOTATION


def Schedule(mod: Any, **kwargs: Any) -> Any:  # noqa: N802 - mirrors the TVM class name
    """Create a TensorIR schedule (``tvm.tir.Schedule`` in the course)."""
    return s_tir().Schedule(mod, **kwargs)


def schedule_type() -> type:
    """The TensorIR schedule class (``tvm.tir.Schedule`` in the course)."""
    return s_tir().Schedule


def trace_type() -> type:
    """The class of a schedule's trace (``tvm.tir.schedule.Trace`` in the course)."""
    return s_tir().schedule.Trace


def make_trace(insts: Any, decisions: dict[Any, Any]) -> Any:
    """A trace of ``insts`` with the given sampling ``decisions``."""
    return trace_type()(insts, decisions)


def apply_json_trace(json_value: Any, sch: Any) -> None:
    """Replay a trace saved as JSON (``Trace.as_json()``) onto schedule ``sch``."""
    trace_type().apply_json_to_schedule(json_value, sch)


def block_rv_type() -> type:
    """The class of a schedule's block handle (``BlockRV`` in the course)."""
    return s_tir().schedule.SBlockRV


def loop_rv_type() -> type:
    """The class of a schedule's loop handle."""
    return s_tir().schedule.LoopRV


def trace_rv_names(trace: Any) -> list[tuple[Any, str]]:
    """Each handle a trace's instructions output, with the name ``Trace.as_python`` gives it:
    ``b`` (block), ``l`` (loop) or ``v`` (value), then the output's position (``b0, l1, l4``)."""
    block, loop = block_rv_type(), loop_rv_type()
    names: list[tuple[Any, str]] = []
    for inst in trace.insts:
        for rv in inst.outputs:
            kind = "b" if isinstance(rv, block) else "l" if isinstance(rv, loop) else "v"
            names.append((rv, f"{kind}{len(names)}"))
    return names


#: The schedule method that returns a block handle by name (``get_block`` in the course).
GET_BLOCK_METHOD = "get_sblock"


#: The trace instruction kind of that method.
GET_BLOCK_INSTRUCTION = "GetSBlock"

#: The trace instruction that sets an annotation: inputs ``[handle, value]``, attrs ``[key]``.
ANNOTATE_INSTRUCTION = "Annotate"

#: Annotations whose value TVM's code generators link into the build as native code (LLVM IR,
#: whose module assembly and constructors run when the library loads; C source).
IMPORT_PRAGMAS = frozenset({"pragma_import_llvm", "pragma_import_c"})

#: The annotation keys a trace or record from a file may set: those MetaSchedule's rules and
#: postprocessors, dlight's schedules and the project's spaces write, each read by a TVM pass as
#: a hint (unrolling, vectorising, parallelising, pipelining, tensorizing with a registered
#: intrinsic, prefetching the weight's next panel into a cache: :mod:`.prefetch`, which reads only
#: addresses the kernel reads). Any other key, the import pragmas first, is refused in code from
#: elsewhere.
TRACE_ANNOTATIONS = frozenset(
    {
        "meta_schedule.adaptive_pool_avg",
        "meta_schedule.adaptive_pool_max",
        "meta_schedule.auto_tensorize",
        "meta_schedule.auto_tensorize_init",
        "meta_schedule.cooperative_fetch",
        "meta_schedule.inline_rule",
        "meta_schedule.layout_rewrite_preproc",
        "meta_schedule.parallel",
        "meta_schedule.pool_avg",
        "meta_schedule.pool_max",
        "meta_schedule.random_compute_producer",
        "meta_schedule.thread_extent_high_inclusive",
        "meta_schedule.thread_extent_low_inclusive",
        "meta_schedule.tiling_structure",
        "meta_schedule.unroll_explicit",
        "meta_schedule.unroll_implicit",
        "meta_schedule.vectorize",
        "meta_schedule.write_cache_level",
        PREFETCH_ANNOTATION,
        PREFETCH_LOCALITY_ANNOTATION,
        "pragma_auto_unroll_max_step",
        "pragma_loop_partition_hint",
        "pragma_unroll",
        "pragma_unroll_explicit",
        "pragma_vectorize",
        "software_pipeline_async_stages",
        "software_pipeline_order",
        "software_pipeline_stage",
        "warp_execution",
        "double_buffer_scope",
    }
)


def trace_steps(trace: Any) -> list[tuple[str, list[Any], list[Any]]]:
    """Each instruction of a trace as ``(kind, inputs, attrs)``: a ``Trace`` object's, or the
    instructions of ``Trace.as_json()`` (``[[kind, inputs, attrs, outputs], ...], decisions``)."""
    if isinstance(trace, trace_type()):
        return [(inst.kind.name, list(inst.inputs), list(inst.attrs)) for inst in trace.insts]
    insts = trace[0] if isinstance(trace, list | tuple) and trace else []
    return [
        (str(inst[0]), list(inst[1]), list(inst[2]))
        for inst in insts
        if isinstance(inst, list | tuple) and len(inst) >= 3
    ]


#: How a schedule error names an IR object in its message (``tirx.For#0``, ``s_tir.SBlock#1``,
#: ``tir.Block#2`` in older releases); the IR dump marks the object's line with ``# <ref>``.
SCHEDULE_ERROR_OBJECT_REF = r"\b((?:s_tir|tirx|tir)\.(?:SBlock|Block|For|Loop)\w*#\d+)"


def get_block(sch: Any, name: str, func_name: str | None = None) -> Any:
    """The handle of block ``name`` in schedule ``sch`` (``sch.get_block`` in the course)."""
    method = getattr(sch, GET_BLOCK_METHOD)
    return method(name) if func_name is None else method(name, func_name=func_name)


def is_schedule(obj: Any) -> bool:
    """True for a TensorIR schedule (``sch``)."""
    return isinstance(obj, s_tir().Schedule)


def dlight() -> ModuleType:
    """dlight, TVM's rule-based default schedules (``tvm.dlight`` before 0.27)."""
    tvm()
    import tvm.s_tir.dlight as dl

    return dl


def winograd_matrices(m: int, r: int) -> tuple[Any, Any, Any]:
    """Winograd's F(m, r) transform matrices as NumPy arrays ``(A, B, G)``: ``A`` is
    ``a x m``, ``B`` ``a x a``, ``G`` ``a x r`` (``a = m + r - 1``), so that a correlation of
    ``d`` (``a`` values) with ``g`` (``r``) is ``A^T [(G g) * (B^T d)]``. Cook-Toom's construction
    with the interpolation points TVM's topi chose for their low rounding error (private helpers
    of ``tvm.topi.nn.winograd_util`` in 0.27)."""
    from tvm.topi.nn import winograd_util

    points = winograd_util._interpolation_points(m + r - 2)
    return winograd_util._cook_toom_convolution(points, m, r)
