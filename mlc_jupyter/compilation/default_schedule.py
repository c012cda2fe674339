"""Default schedules for the kernels TVM makes out of a Relax model's operators.

``tvm.compile`` legalises each Relax operator (``R.nn.conv2d``, ``R.matmul`` ...) into a plain loop
nest and builds it as written: one thread, no vectors, no tiling. An imported ResNet-18 then runs
about 80x slower than in PyTorch. A model build here runs TVM's own graph passes first (batch norm
folded for inference, operators legalised and fused into kernels), then gives every kernel those
passes made a schedule:

* CPU, matmul-like kernels (dense layers, attention's batch matmuls): the BLIS structure of
  :mod:`.matmul_schedule` (a register micro-kernel, the weight packed into panels at build time)
  with its tile chosen by rule; 1x1 stride-1 convolutions too, legalised as the matrix products
  they are (:mod:`.pointwise`).
* CPU, convolutions, pooling, means: :mod:`.conv_schedule`'s direct convolution (Winograd for the
  3x3 convolutions a build legalised so, :mod:`.winograd`).
* CPU, softmax over the last axis: legalised as topi's ``fast_softmax`` and scheduled a row at a
  time by :mod:`.softmax_schedule` (each exponential computed once, vectorised).
* CPU, normalisations over the last axis (layer norm, RMS norm): a row at a time, the reductions
  in vector registers (:mod:`.row_norm_schedule`).
* CPU, the rest: MetaSchedule's default design space for the kernel (its schedule rules: inlining,
  multi-level tiling with a write cache, parallel / vector / unroll annotations), with each
  sampling decision chosen by a rule instead of at random (:func:`_tile`): the innermost loop of
  the last spatial axis fills a vector register, the axis before it is blocked in registers, outer
  loops are parallel until every core has ``JOBS_PER_CORE`` jobs, and inner loops unroll up to
  ``UNROLL_STEPS``. No candidate is measured: it is a starting point for ``%mlc_tune``.
* GPU: dlight's rules (Matmul, GEMV, Reduction, GeneralReduction, Fallback), as MLC-LLM builds.

PrimFuncs already in the module (written by hand, or scheduled) keep their loops. A kernel no rule
fits keeps TVM's loops too, and is named in :attr:`Prepared.unscheduled`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..tvm_compat import (
    IS_SCHEDULED_ATTR,
    NOALIAS_ATTR,
    Schedule,
    dlight,
    ir_module_type,
    metaschedule,
    prim_func_type,
    relax_bindings,
    relax_expr_kind,
    structural_equal,
    structural_hash,
    tune_context,
    tvm,
    vector_bits,
)
from . import input_layout
from .clip_layout import clip_as_min_max
from .dataflow_outputs import return_outputs
from .intrinsics import load_tensor_intrinsics
from .reshape_sinking import sink_reshapes
from .targets import core_cache_bytes
from .weight_folding import fold_affine_epilogues, fold_constants, run_packings

#: Relax operators that only call kernels; a module with nothing else needs no legalising.
_CALLS = ("relax.call_tir", "relax.call_dps_packed", "relax.call_pure_packed", "relax.call_")
#: Parallel jobs per core the outer loops of a CPU kernel are split into (MetaSchedule's figure).
JOBS_PER_CORE = 16
#: Registers' worth of accumulators along the axis before the vector axis.
REGISTER_BLOCK = 8
#: The unroll limit picked among MetaSchedule's candidates (0, 16, 64, 512).
UNROLL_STEPS = 16
#: The layouts of a CPU build's convolutions (data, weight): channels innermost, so that output
#: channels fill vector registers (Relax's ``ConvertLayout`` converts the rest of the graph).
CPU_LAYOUTS = {"relax.nn.conv2d": ["NHWC", "HWIO"]}
#: The attribute that lists a kernel's layout-free (constant) arguments, as MetaSchedule reads it.
LAYOUT_FREE_ATTR = "layout_free_buffers"
#: What the scheduled kernels carry, so that later passes (dlight, MetaSchedule) leave them be.
SCHEDULED = IS_SCHEDULED_ATTR

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class Prepared:
    """A Relax module ready to build: operators legalised, fused, kernels scheduled."""

    mod: Any
    scheduled: tuple[str, ...] = ()
    unscheduled: tuple[str, ...] = ()
    #: the module legalised and fused, before any kernel got a schedule
    fused: Any = None
    #: each scheduled CPU kernel's trace (replays on its unscheduled kernel; seeds a tuning run)
    traces: dict[str, Any] = field(default_factory=dict)

    def notes(self) -> tuple[str, ...]:
        """One line on the kernels' schedules, for the build's summary."""
        line = f"{len(self.scheduled)} kernel(s) of the model's operators got default schedules"
        if self.unscheduled:
            line += f"; {', '.join(self.unscheduled)} kept TVM's loops (no rule fits)"
        return (line,)


def operator_counts(mod: Any) -> dict[str, int]:
    """How often each Relax operator is called in the module's Relax functions.

    Calls of kernels (``R.call_tir``, ``R.call_dps_packed`` ...) do not count: a module made
    only of those (the book's chapter 3 modules, ``emit_te``) builds as written.
    """
    relax_function = tvm().relax.Function
    counts: dict[str, int] = {}
    for _, func in mod.functions_items():
        if not isinstance(func, relax_function):
            continue
        for _var, value in relax_bindings(func):
            if relax_expr_kind(value) != "call" or relax_expr_kind(value.op) != "op":
                continue
            name = str(value.op.name)
            if not name.startswith(_CALLS):
                counts[name] = counts.get(name, 0) + 1
    return counts


def has_operators(mod: Any) -> bool:
    """True when a Relax function calls operators that TVM legalises into new kernels."""
    return bool(operator_counts(mod))


def legalize_and_fuse(
    mod: Any, target: Any, winograd_tiles: Mapping[str, int] | None = None
) -> Any:
    """TVM's passes from operators to fused kernels, batch norm folded for inference first.

    On CPUs, convolutions are converted to :data:`CPU_LAYOUTS` first (the layout
    :mod:`.conv_schedule` is written for; the weights' transposes are folded here; clips become
    a maximum and a minimum, which the conversion carries the layout through), and each
    kernel's constant arguments are marked layout-free: a schedule may then pack them in the
    order its loops read them (MetaSchedule's ``RewriteLayout``), once, at build time
    (:func:`pack_weights`).

    The same passes give ``%mlc_tune`` its tasks, so a tuned kernel replaces the one built here;
    ``winograd_tiles``: the way (a Winograd tile, or direct) a model's tuning chose for a layer,
    by :func:`.winograd.layer_key`, where it differs from the build's (:func:`.winograd.plan_for`).
    A function that returns a dataflow variable (the book's FX translator) returns its output
    instead, as FuseOps would otherwise fuse the returned variable away.
    """
    mod = return_outputs(mod)
    _tvm = tvm()
    transform = _tvm.relax.transform
    cpu = "gpu" not in list(target.keys)
    passes = [
        *_graph_passes(mod, target, winograd_tiles),
        transform.LegalizeOps(_cpu_legalizations(target, winograd_tiles) if cpu else None),
        transform.AnnotateTIROpPattern(),
        transform.FoldConstant(),
        # FuseOps gives an operator with two anchors among its inputs (a residual add) to the
        # one bound first: sorted depth-first from the outputs, that is its first operand's
        # (the block's last convolution) whichever branch the model's code computes first, so
        # that convolution is one kernel with the blocks' that have no downsampling branch
        transform.TopologicalSort("depth-first", "from-outputs"),
        transform.FuseOps(),
        transform.FuseTIR(),
        transform.DeadCodeElimination(),
    ]
    with target, _tvm.transform.PassContext(opt_level=3):
        fused = _tvm.transform.Sequential(passes)(mod)
    return fused if "gpu" in list(target.keys) else mark_constant_arguments(fused, mod)


def _graph_passes(mod: Any, target: Any, winograd_tiles: Mapping[str, int] | None) -> list[Any]:
    """The passes before operators are legalised (layouts, batch norm, constants folded)."""
    transform = tvm().relax.transform
    cpu = "gpu" not in list(target.keys)
    # Relax's ConvertLayout fails (std::bad_alloc) on graphs without the ops it converts, such
    # as a transformer encoder layer: run it only where there is a convolution to convert
    layouts = (
        [_module_pass(clip_as_min_max, "ClipAsMinMax"), transform.ConvertLayout(CPU_LAYOUTS)]
        if cpu and _calls_any(mod, CPU_LAYOUTS)
        else []
    )
    folder = _input_transposes_folder(target, winograd_tiles) if cpu else None
    return [
        *layouts,
        transform.DecomposeOpsForInference(),
        transform.CanonicalizeBindings(),
        transform.DeadCodeElimination(),
        _module_pass(fold_constants, "FoldConstantsInNumPy"),
        _module_pass(fold_affine_epilogues, "FoldAffineEpilogues"),
        _module_pass(sink_reshapes, "SinkReshapes"),
        *([_module_pass(folder, "FoldInputTransposes")] if folder is not None else []),
    ]


def winograd_candidates(mod: Any, target: Any) -> dict[str, Any]:
    """The ``conv2d`` calls of a CPU build's graph (before legalisation) that a model's tuning
    may compute in more than one way (:func:`.winograd.tile_options`), one per
    :func:`.winograd.layer_key` (a first convolution that reads the NCHW input is left as the
    build makes it)."""
    from . import conv_schedule, winograd  # deferred: import TVM at import time

    if "gpu" in list(target.keys):
        return {}
    unit = conv_schedule.vector_unit(target)
    with target, tvm().transform.PassContext(opt_level=3):
        graph = tvm().transform.Sequential(_graph_passes(mod, target, None))(return_outputs(mod))
    out: dict[str, Any] = {}
    for _, func in graph.functions_items():
        if not isinstance(func, tvm().relax.Function):
            continue
        for _var, value in relax_bindings(func):
            if str(getattr(getattr(value, "op", None), "name", "")) != "relax.nn.conv2d":
                continue
            if input_layout.is_folded(value):
                continue
            if len(winograd.tile_options(value, unit.lanes)) > 1:
                out.setdefault(winograd.layer_key(value), value)
    return out


def _cpu_legalizations(
    target: Any, winograd_tiles: Mapping[str, int] | None = None
) -> dict[str, Callable[[Any, Any], Any]]:
    """Relax operators a CPU build turns into kernels of its own: 3x3 stride-1 convolutions
    that gain from it become Winograd kernels (:mod:`.winograd`), 1x1 ones matrix products
    (:mod:`.pointwise`), the rest TVM's."""
    from . import conv_schedule, pointwise, softmax_schedule, winograd  # deferred: import TVM

    conv2d = tvm().ir.Op.get("relax.nn.conv2d").get_attr("FLegalize")
    unit = conv_schedule.vector_unit(target)

    def legalize_conv2d(bb: Any, call: Any) -> Any:
        if input_layout.is_folded(call):
            return input_layout.legalize(bb, call)
        if pointwise.is_pointwise(call, unit.lanes):
            return pointwise.legalize(call, bb)
        plan = winograd.plan_for(call, unit.lanes, unit.registers, winograd_tiles)
        return conv2d(bb, call) if plan is None else winograd.legalize(call, bb, plan)

    return {
        "relax.nn.conv2d": legalize_conv2d,
        "relax.nn.softmax": softmax_schedule.legalize_softmax,
    }


def _input_transposes_folder(
    target: Any, winograd_tiles: Mapping[str, int] | None = None
) -> Callable[[Any], Any]:
    """:func:`.input_layout.fold_input_transposes` for ``target``: a first convolution that
    becomes a Winograd kernel keeps its input transpose (the Winograd kernel reads NHWC)."""
    from . import conv_schedule, winograd  # deferred: import TVM at import time

    unit = conv_schedule.vector_unit(target)

    def winograd_planned(call: Any) -> bool:
        return winograd.plan_for(call, unit.lanes, unit.registers, winograd_tiles) is not None

    return lambda mod: input_layout.fold_input_transposes(mod, keep=winograd_planned)


def _module_pass(rewrite: Callable[[Any], Any], name: str) -> Any:
    """A module-to-module function as a TVM pass (so a pass instrument sees it by ``name``)."""
    return tvm().transform.module_pass(lambda mod, _ctx: rewrite(mod), opt_level=0, name=name)


def _calls_any(mod: Any, ops: Any) -> bool:
    """True when a Relax function of ``mod`` calls one of the operators named in ``ops``."""
    for _, func in mod.functions_items():
        if isinstance(func, prim_func_type()):
            continue
        for _, value in relax_bindings(func):
            if str(getattr(getattr(value, "op", None), "name", "")) in ops:
                return True
    return False


def mark_constant_arguments(mod: Any, before: Any) -> Any:
    """Each new kernel with :data:`LAYOUT_FREE_ATTR` listing the arguments that are constants at
    every call (the weights); a kernel ``before`` had keeps its attributes.

    TVM's ``AttachAttrLayoutFreeBuffers`` does the same but renames every function it touches,
    and a kernel's name is how a profile, a tuning task and ``--func`` find it.
    """
    known = {gv.name_hint for gv, _ in before.functions_items()}
    constant: dict[str, set[int]] = {}
    for _, func in mod.functions_items():
        if not isinstance(func, tvm().relax.Function):
            continue
        for _var, value in relax_bindings(func):
            if relax_expr_kind(value) != "call" or len(value.args) < 2:
                continue
            callee, args = value.args[0], value.args[1]
            if relax_expr_kind(callee) != "global" or relax_expr_kind(args) != "tuple":
                continue
            consts = {i for i, arg in enumerate(args.fields) if relax_expr_kind(arg) == "const"}
            name = callee.name_hint
            constant[name] = constant.get(name, consts) & consts
    out = mod.clone()
    for gv, func in mod.functions_items():
        indices = sorted(constant.get(gv.name_hint, ()))
        if isinstance(func, prim_func_type()) and indices and gv.name_hint not in known:
            out.update_func(gv, func.with_attr(LAYOUT_FREE_ATTR, indices))
    return out


#: TVM's names for the two halves of a kernel that packs its weights: the kernel reading the
#: packed weights, and the packing (run once, at build time).
PACKED_SUFFIX = "_prepacked"
PACKING_SUFFIX = "_weight_prepack"
_PACKED: dict[str, tuple[Any, Any]] = {}


def pack_weights(mod: Any) -> Any:
    """``mod`` with the weight packing its kernels carry split off and run at build time.

    A kernel scheduled with ``RewriteLayout`` starts by copying a constant argument into the
    layout its loops read (a layout-rewrite block). TVM's ``SplitLayoutRewritePreproc`` moves
    each copy into a kernel of its own called on the constant, and ``FoldConstant`` runs it now:
    the built model holds the packed weights. A module without such kernels is returned as is.
    Remembered per module, like :func:`prepare_model`.
    """
    packs = any(
        isinstance(f, prim_func_type()) and f.attrs is not None and LAYOUT_FREE_ATTR in f.attrs
        for _, f in mod.functions_items()
    )
    if not packs:
        return mod
    key = f"{structural_hash(mod):x}"
    known = _PACKED.get(key)
    if known is not None and structural_equal(known[0], mod):
        return known[1]
    _tvm = tvm()
    transform = _tvm.relax.transform
    passes = [
        transform.SplitLayoutRewritePreproc(),
        _module_pass(
            lambda m: run_packings(m, lambda name: name.endswith(PACKING_SUFFIX)),
            "PackWeightsInNumPy",
        ),
        transform.FoldConstant(),
        transform.DeadCodeElimination(),
    ]
    with _tvm.transform.PassContext(opt_level=3):
        packed = _tvm.transform.Sequential(passes)(mod)
    # The kernels keep their global symbols, so DCE keeps them: drop what the split replaced.
    names = {gv.name_hint for gv, _ in packed.functions_items()}
    for gv, _ in list(packed.functions_items()):
        name = gv.name_hint
        if name.endswith(PACKING_SUFFIX) or name + PACKED_SUFFIX in names:
            del packed[gv]
    while len(_PACKED) >= REMEMBERED:
        _PACKED.pop(next(iter(_PACKED)))
    _PACKED[key] = (mod, packed)
    return packed


def new_kernels(before: Any, after: Any) -> list[tuple[Any, Any]]:
    """The PrimFuncs of ``after`` that ``before`` did not have (made by legalising), unscheduled."""
    known = {gv.name_hint for gv, f in before.functions_items() if isinstance(f, prim_func_type())}
    found = []
    for gv, func in after.functions_items():
        if not isinstance(func, prim_func_type()) or gv.name_hint in known:
            continue
        if func.attrs is not None and SCHEDULED in func.attrs:
            continue
        found.append((gv, func))
    return found


#: How many prepared models are remembered (each holds its weights).
REMEMBERED = 8
_PREPARED: dict[str, tuple[Any, Prepared]] = {}


def prepare_model(
    mod: Any,
    target: Any,
    on_progress: Progress | None = None,
    *,
    winograd_tiles: Mapping[str, int] | None = None,
) -> Prepared:
    """Legalise and fuse ``mod``'s operators, then schedule each new kernel for ``target``.

    ``winograd_tiles``: the way a model's tuning chose for some layers (:func:`legalize_and_fuse`).
    Remembered per module, target and those choices for the kernel's life (a rebuild or a timing
    of the same model does not schedule it again).
    """
    chosen = sorted((winograd_tiles or {}).items())
    key = f"{structural_hash(mod):x}|{target}|{chosen}"
    known = _PREPARED.get(key)
    if known is not None and structural_equal(known[0], mod):
        return known[1]
    prepared = _prepare(mod, target, on_progress, winograd_tiles)
    while len(_PREPARED) >= REMEMBERED:
        _PREPARED.pop(next(iter(_PREPARED)))
    _PREPARED[key] = (mod, prepared)
    return prepared


def forget_prepared() -> None:
    """Forget the models :func:`prepare_model` and :func:`pack_weights` remembered."""
    _PREPARED.clear()
    _PACKED.clear()


def _prepare(
    mod: Any, target: Any, on_progress: Progress | None, winograd_tiles: Mapping[str, int] | None
) -> Prepared:
    if on_progress is not None:
        on_progress("legalising and fusing operators", 0, 0)
    fused = legalize_and_fuse(mod, target, winograd_tiles)
    out = fused.clone()
    kernels = new_kernels(mod, fused)
    gpu = "gpu" in list(target.keys)
    scheduled, unscheduled, traces = [], [], {}
    for index, (gv, func) in enumerate(kernels):
        if on_progress is not None:
            on_progress("scheduling kernels", index, len(kernels))
        found = (gpu_schedule(func, target), None) if gpu else _cpu_schedule(func, target)
        if found is None or found[0] is None:
            unscheduled.append(gv.name_hint)
            continue
        out.update_func(
            out.get_global_var(gv.name_hint), found[0].with_attr("global_symbol", gv.name_hint)
        )
        scheduled.append(gv.name_hint)
        if found[1] is not None:
            traces[gv.name_hint] = found[1]
    if on_progress is not None and kernels:
        on_progress("scheduling kernels", len(kernels), len(kernels))
    return Prepared(out, tuple(scheduled), tuple(unscheduled), fused, traces)


def gpu_schedule(func: Any, target: Any) -> Any | None:
    """dlight's default GPU schedule of one kernel (``None`` when no rule applies)."""
    dl = dlight()
    mod = ir_module_type()({"main": func.with_attr("global_symbol", "main")})
    rules = (dl.gpu.Matmul(), dl.gpu.GEMV(), dl.gpu.Reduction(), dl.gpu.GeneralReduction())
    try:
        with target:
            out = dl.ApplyDefaultSchedule(*rules, dl.gpu.Fallback())(mod)
    except Exception:  # noqa: BLE001 - a kernel no rule handles keeps TVM's loops
        return None
    new = out["main"]
    if new.attrs is None or SCHEDULED not in new.attrs:
        return None
    return new


def _cores(target: Any) -> int:
    return int(target.attrs["num-cores"]) if "num-cores" in target.attrs else os.cpu_count() or 1


def _with_cores(target: Any) -> Any:
    """``target`` with ``num-cores`` set (MetaSchedule's rules need it), this machine's by default."""
    if "num-cores" in target.attrs:
        return target
    return tvm().target.Target({**dict(target.export()), "num-cores": _cores(target)})


def cpu_schedule(func: Any, target: Any) -> Any | None:
    """MetaSchedule's default design space of one kernel, decisions chosen by rule, post-processed.

    Returns the scheduled PrimFunc, or ``None`` when MetaSchedule cannot schedule it (dynamic
    shapes, a post-processor that refuses the result).
    """
    found = _cpu_schedule(func, target)
    return found[0] if found is not None else None


def _cpu_schedule(func: Any, target: Any) -> tuple[Any, Any] | None:
    """The scheduled kernel of :func:`cpu_schedule` and its trace (post-processing included)."""
    ms = metaschedule()
    load_tensor_intrinsics(target)
    target = _with_cores(target)
    task = ir_module_type()(
        {"main": func.with_attr("global_symbol", "main").with_attr(NOALIAS_ATTR, True)}
    )
    # matmul-like before window-like, as the tuner chooses its space (a 1x1 convolution is both)
    window = (
        _winograd_schedule(task, target)
        or _matmul_schedule(task, target)
        or _window_schedule(task, target)
        or _softmax_schedule(task, target)
        or _row_norm_schedule(task, target)
    )
    if window is not None:
        return window
    try:
        # MetaSchedule's CPU rules without the one that looks up rules registered for a block
        # (none are, for the CPU; it logs the name of each it misses, e.g. max pooling's).
        rules = [
            rule
            for rule in ms.ScheduleRule.create("llvm")
            if not isinstance(rule, ms.schedule_rule.ApplyCustomRule)
        ]
        context = tune_context(
            mod=task,
            target=target,
            space_generator=ms.space_generator.PostOrderApply(sch_rules=rules),
            search_strategy="replay-trace",
            rand_state=0,
            num_threads=1,
        )
        spaces = context.generate_design_space()
        if not spaces:
            return None
        trace = spaces[0].trace
        decisions = _decisions(trace, vector_bits(target) // _dtype_bits(func), _cores(target))
        sch = Schedule(task)
        trace.apply_to_schedule(sch, remove_postproc=True, decision_provider=decisions)
        sch.enter_postproc()  # as MetaSchedule marks it: a replay of the trace drops what follows
        for postproc in context.space_generator.postprocs:
            if not postproc.apply(sch):
                return None
    except Exception:  # noqa: BLE001 - a kernel MetaSchedule cannot schedule keeps TVM's loops
        return None
    return sch.mod["main"].with_attr(SCHEDULED, True), sch.trace


def _winograd_schedule(task: Any, target: Any) -> tuple[Any, Any] | None:
    """The Winograd kernel's schedule (:mod:`.winograd`) with its register tile chosen by rule
    (``None`` for any other kernel)."""
    from . import conv_schedule, winograd  # deferred: imports TVM at import time

    if winograd.tile_of(task["main"]) is None:
        return None
    sch = Schedule(task)
    unit = conv_schedule.vector_unit(target)
    decisions = winograd.rule_decisions_for(
        task["main"], unit.lanes, unit.registers, _cores(target)
    )
    winograd.schedule_winograd(sch, unit.lanes, decisions)
    if not _postprocessed(sch):
        return None
    return sch.mod["main"].with_attr(SCHEDULED, True), sch.trace


def _window_schedule(task: Any, target: Any) -> tuple[Any, Any] | None:
    """The direct-convolution schedule of :mod:`.conv_schedule` with its tile chosen by rule
    (``None`` for a kernel it does not apply to)."""
    from . import conv_schedule  # deferred: imports TVM at import time

    sch = Schedule(task)
    try:
        dtype = conv_schedule.find_window(sch, 16).dtype
        unit = conv_schedule.vector_unit(target, dtype)
        window = conv_schedule.find_window(sch, unit.lanes)
        decisions = conv_schedule.rule_decisions(sch, window, unit.registers)
        conv_schedule.schedule_window(sch, unit, decisions)
        if not _postprocessed(sch):
            return None
    except conv_schedule.NotWindow:
        return None
    except Exception:  # noqa: BLE001 - a primitive refused: MetaSchedule's space schedules it
        return None
    return sch.mod["main"].with_attr(SCHEDULED, True), sch.trace


def _postprocessed(sch: Any) -> bool:
    """Apply MetaSchedule's CPU post-processors to a rule-scheduled kernel, as its search does to a
    candidate; ``False`` when one refuses it (MetaSchedule's space then schedules the kernel)."""
    sch.enter_postproc()
    return all(postproc.apply(sch) for postproc in metaschedule().postproc.Postproc.create("llvm"))


def _softmax_schedule(task: Any, target: Any) -> tuple[Any, Any] | None:
    """The row-at-a-time softmax of :mod:`.softmax_schedule` (``None`` for any other kernel)."""
    from . import softmax_schedule  # deferred: imports TVM at import time

    return _rows_schedule(
        task, target, softmax_schedule.schedule_softmax, softmax_schedule.NotSoftmax
    )


def _row_norm_schedule(task: Any, target: Any) -> tuple[Any, Any] | None:
    """The row-at-a-time layer norm of :mod:`.row_norm_schedule` (``None`` for any other
    kernel)."""
    from . import row_norm_schedule  # deferred: imports TVM at import time

    return _rows_schedule(
        task, target, row_norm_schedule.schedule_row_norm, row_norm_schedule.NotRowNorm
    )


def _rows_schedule(
    task: Any, target: Any, schedule: Callable[[Any, int], None], verdict: type[Exception]
) -> tuple[Any, Any] | None:
    """``task`` scheduled a row at a time by ``schedule(sch, lanes)``, post-processed (``None``
    when it raises ``verdict``, or a primitive or post-processor refuses)."""
    from . import conv_schedule  # deferred: imports TVM at import time

    sch = Schedule(task)
    try:
        schedule(sch, conv_schedule.vector_unit(target).lanes)
        if not _postprocessed(sch):
            return None
    except verdict:
        return None
    except Exception:  # noqa: BLE001 - a primitive refused: MetaSchedule's space schedules it
        return None
    return sch.mod["main"].with_attr(SCHEDULED, True), sch.trace


def _matmul_schedule(task: Any, target: Any) -> tuple[Any, Any] | None:
    """The BLIS structure of :mod:`.matmul_schedule` with its tile chosen by rule (``None`` for a
    kernel that is not matmul-like)."""
    from . import conv_schedule, matmul_schedule  # deferred: import TVM at import time

    found = matmul_schedule.rule_schedule(
        task,
        lambda dtype: conv_schedule.vector_unit(target, dtype),
        _cores(target),
        LAYOUT_FREE_ATTR,
        core_cache_bytes(target),
    )
    return None if found is None else (found[0].with_attr(SCHEDULED, True), found[1])


def _dtype_bits(func: Any) -> int:
    """Bits of the kernel's output element (its last parameter)."""
    try:
        return max(8, int(func.params[-1].dtype.bits))
    except Exception:  # noqa: BLE001 - a kernel whose last parameter is not a buffer
        return 32


def _largest_divisor(n: int, cap: int) -> int:
    return max(d for d in range(1, max(1, min(n, cap)) + 1) if n % d == 0)


def _smallest_divisor_at_least(n: int, low: int) -> int:
    return min((d for d in range(1, n + 1) if n % d == 0 and d >= low), default=n)


def _tile(extents: list[int], lanes: int, jobs: int) -> list[list[int]]:
    """Four-level tiles (parallel, serial, between reductions, innermost) of the spatial axes.

    The last axis's innermost tile is one vector register; the axis before it is blocked by up to
    ``REGISTER_BLOCK`` rows kept in registers; the outer levels give ``jobs`` parallel jobs, taken
    from the outermost axes first.
    """
    tiles = []
    parallel = 1
    for index, extent in enumerate(extents):
        inner = 1
        if index == len(extents) - 1:
            inner = _largest_divisor(extent, lanes)
        elif index == len(extents) - 2:
            inner = _largest_divisor(extent, REGISTER_BLOCK)
        rest = extent // inner
        outer = 1
        if parallel < jobs:
            outer = _smallest_divisor_at_least(rest, math.ceil(jobs / parallel))
            parallel *= outer
        tiles.append([outer, rest // outer, 1, inner])
    return tiles


def _decisions(trace: Any, lanes: int, cores: int) -> Callable[..., Any]:
    """A decision provider for ``Trace.apply_to_schedule`` that picks every decision by rule."""
    chosen: list[tuple[Any, Any]] = []
    group: list[tuple[Any, int, int]] = []

    def close_group() -> None:
        spatial = [(inst, extent) for inst, n, extent in group if n == 4]
        for inst, n, extent in group:
            if n != 4:  # reduction levels: the innermost as long as MetaSchedule allows
                inner = _largest_divisor(extent, int(inst.attrs[1]))
                tile = [extent // inner, inner] if n >= 2 else [extent]
                chosen.append((inst, [1] * max(0, n - 2) + tile))
        if spatial:
            tiles = _tile([e for _, e in spatial], lanes, JOBS_PER_CORE * cores)
            chosen.extend((inst, tile) for (inst, _), tile in zip(spatial, tiles, strict=True))
        group.clear()

    for inst in trace.insts:
        kind = inst.kind.name
        if kind == "SamplePerfectTile":
            decision = [int(v) for v in trace.decisions[inst]]
            group.append((inst, int(inst.attrs[0]), math.prod(decision)))
        elif kind != "Split" and group:
            close_group()
    if group:
        close_group()

    def provide(inst: Any, inputs: Any, attrs: Any, decision: Any) -> Any:
        kind = inst.kind.name
        if kind == "SamplePerfectTile":
            for known, value in chosen:
                if known.same_as(inst):
                    return value
        if kind == "SampleCategorical":
            values = [int(v) for v in inst.attrs[0]]
            return min(range(len(values)), key=lambda i: abs(values[i] - UNROLL_STEPS))
        if kind == "SampleComputeLocation":
            return -1  # at the root: the producer runs once, parallel and vectorised
        return decision

    return provide
