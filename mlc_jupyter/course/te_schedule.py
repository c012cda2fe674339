"""Legacy TE schedules on TensorIR: ``te.create_schedule(ops)``, ``s[C].split(...)``,
``tvm.lower(s, args)`` and ``tvm.build(s, args, target)`` as older tutorials (and the concept blog)
write them.

TVM 0.27 removed TE schedules; what they did is what a TensorIR schedule does to the function
``te.create_prim_func`` makes of the same tensors. :func:`create_schedule` makes that function and
a TensorIR schedule of it (``s.sch``); each stage ``s[C]`` is the block of ``C``, each iter var
of ``C.op.axis`` / ``C.op.reduce_axis`` is that block's loop, and each stage primitive is the
TensorIR primitive it maps to, applied at once, so the schedule's trace (``%mlc_trace s``, the
stepper of ``%mlc_schedule s``) shows the TensorIR steps the TE code became. A primitive with no
TensorIR counterpart raises :class:`~mlc_jupyter.errors.TEScheduleError` naming what to do.

``lower(s, args)`` is the scheduled function taking ``args`` (the other tensors the schedule
computes become buffers of the function); ``build`` adds the tensors that nothing reads and
``args`` leave out as trailing parameters the built module fills with scratch tensors: TVM 0.27
drops the computation of a buffer that is written and never read, and the blog times such
builds.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .. import tvm_compat
from ..errors import TEScheduleError
from ..schedule.handle_names import remember_names

#: Stage methods of the old TE schedule that TensorIR has no counterpart for: what to do instead.
STAGE_WITHOUT_COUNTERPART = {
    "compute_root": "a TensorIR block stays at the root until compute_at or compute_inline moves "
    "it; leave this line out (to undo a compute_at, re-run from te.create_schedule)",
    "env_threads": "bind each loop to its thread instead: s[C].bind(loop, te.thread_axis(tag))",
    "set_scope": "cache the tensor in that scope instead: s.cache_write(C, scope)",
    "set_store_predicate": "TensorIR writes a block's predicate itself when a split does not "
    "divide: leave this line out",
    "double_buffer": "TensorIR double-buffers by software pipelining: annotate the loop on the "
    "TensorIR schedule (s.sch.annotate(loop, 'software_pipeline_stage', [...]))",
    "tensorize": "declare the intrinsic in TVMScript, register it (tvm.tir.TensorIntrin.register"
    "(name, desc, impl)) and call s.sch.tensorize(loop, name) on the TensorIR schedule",
    "prefetch": "TensorIR has no prefetch primitive: cache the tensor instead (s.cache_read)",
    "rolling_buffer": "use the TensorIR schedule: s.sch.rolling_buffer(block, buffer_index)",
    "transform_layout": "use the TensorIR schedule: s.sch.transform_layout(block, buffer, "
    "index_map)",
}
#: Schedule methods of the old TE schedule that TensorIR has no counterpart for.
SCHEDULE_WITHOUT_COUNTERPART = {
    "rfactor": "use the TensorIR schedule: s.sch.rfactor(loop, factor_axis) on the reduction "
    "loop, then schedule the block it returns",
    "create_group": "TensorIR has no stage groups: compute_at each block where it belongs",
}


def create_schedule(ops: Any) -> TESchedule:
    """``te.create_schedule(ops)``: a schedule of the computation of ``ops`` (an operation or a
    list of them), on TensorIR."""
    return TESchedule(ops)


def lower(
    inputs: Any, args: Iterable[Any] | None = None, name: str = "main", **ignored: Any
) -> Any:
    """``tvm.lower(s, args)``: the scheduled function taking ``args``, in an IRModule (as the
    old ``tvm.lower``); a PrimFunc or IRModule is returned as an IRModule."""
    if isinstance(inputs, TESchedule):
        return inputs.lowered(args, name)
    if isinstance(inputs, tvm_compat.prim_func_type()):
        return tvm_compat.ir_module_type()({name: inputs})
    if isinstance(inputs, tvm_compat.ir_module_type()):
        return inputs
    raise TEScheduleError(
        f"tvm.lower takes a schedule from te.create_schedule, a PrimFunc or an IRModule, not a "
        f"{type(inputs).__name__}"
    )


def _ops(ops: Any) -> list[Any]:
    return list(ops) if isinstance(ops, list | tuple) else [ops]


def _graph(outputs: list[Any]) -> list[Any]:
    """Every operation the outputs need, producers first."""
    order: list[Any] = []

    def visit(op: Any) -> None:
        if any(op.same_as(seen) for seen in order):
            return
        for tensor in op.input_tensors:
            visit(tensor.op)
        order.append(op)

    for op in outputs:
        visit(op)
    return order


def _same_tensor(a: Any, b: Any) -> bool:
    """Two handles of one tensor (``op.output(i)`` makes a new one at each call)."""
    return bool(a.op.same_as(b.op)) and int(a.value_index) == int(b.value_index)


class TESchedule:
    """A legacy TE schedule driving a TensorIR schedule (``sch``) of ``start_mod``, the
    function ``te.create_prim_func`` makes of the computation (``te.Schedule`` in course mode).

    ``s[C]`` is the :class:`Stage` of tensor ``C``; ``sch`` and ``start_mod`` are also what
    ``%mlc_trace s`` and ``%mlc_schedule s`` read.
    """

    def __init__(self, ops: Any) -> None:
        te = tvm_compat.tvm().te
        self.outputs = _ops(ops)
        self.ops = _graph(self.outputs)
        read = [t.op for op in self.ops for t in op.input_tensors]
        self.placeholders = [op.output(0) for op in self.ops if isinstance(op, te.PlaceholderOp)]
        self.sinks = [
            op.output(i)
            for op in self.ops
            if not isinstance(op, te.PlaceholderOp) and not any(op.same_as(r) for r in read)
            for i in range(op.num_outputs)
        ]
        func = te.create_prim_func([*self.placeholders, *self.sinks])
        self.start_mod = tvm_compat.ir_module_type()({"main": func})
        self.sch = tvm_compat.Schedule(self.start_mod)
        self.sch.work_on("main")
        self.stages: list[Stage] = [
            Stage(self, op, op.name) for op in self.ops if not isinstance(op, te.PlaceholderOp)
        ]
        #: loop handles a split or fuse replaced, with the name of what replaced them
        self.replaced: list[tuple[Any, str]] = []

    # -- stages ------------------------------------------------------------------------------------
    def __getitem__(self, key: Any) -> Stage:
        if isinstance(key, Stage):
            return key
        if isinstance(key, CacheTensor):
            return key.stage
        op = getattr(key, "op", key)
        for stage in self.stages:
            if stage.op is not None and stage.op.same_as(op):
                return stage
        name = getattr(op, "name", type(key).__name__)
        raise TEScheduleError(
            f"{name} is not computed by this schedule",
            hint="index the schedule with a tensor its operations compute: s[C]",
        )

    def loop(self, axis: Any) -> Any:
        """The loop handle an iter var of a stage, or a loop a primitive returned, stands for."""
        if isinstance(axis, tvm_compat.loop_rv_type()):
            return self._live(axis, "this loop")
        if isinstance(axis, tvm_compat.iter_var_type()):
            for stage in self.stages:
                index = stage.index_of(axis)
                if index is not None:
                    return self._live(stage.own_loops()[index], str(axis.var.name))
            raise TEScheduleError(
                f"{axis.var.name} is not an axis of this schedule's operations",
                hint="pass an entry of C.op.axis / C.op.reduce_axis, or a loop that split or fuse "
                "returned",
            )
        raise TEScheduleError(
            f"expected a loop (an iter var of op.axis, or what split/fuse returned), not a "
            f"{type(axis).__name__}"
        )

    def _live(self, loop: Any, name: str) -> Any:
        for old, by in self.replaced:
            if old.same_as(loop):
                raise TEScheduleError(
                    f"{name} was {by}: it is no longer a loop of the schedule",
                    hint=f"use the loops {by.split()[0]} returned",
                )
        return loop

    def cache_read(self, tensor: Any, scope: str, readers: Any) -> CacheTensor:
        """``s.cache_read(A, scope, [C])``: a copy of ``A`` in ``scope`` that ``C`` reads."""
        stages = [self[r] for r in _ops(readers)]
        name = self._buffer_name(tensor)
        first = stages[0].block()
        reads = [tvm_compat.region_buffer(r).name for r in self.sch.get(first).reads]
        if name not in reads:
            raise TEScheduleError(f"{stages[0].name} does not read {name}")
        consumers = [s.block() for s in stages] if len(stages) > 1 else None
        block = self.sch.cache_read(first, reads.index(name), scope, consumer_blocks=consumers)
        return self._cache_tensor(block)

    def cache_write(self, tensor: Any, scope: str) -> CacheTensor:
        """``s.cache_write(C, scope)``: ``C`` computed in ``scope`` (the returned tensor's stage)
        and copied out by ``s[C]``, as TE did."""
        stage = self[tensor]
        computing = stage.block()
        copy = self.sch.cache_write(computing, 0, scope)
        stage.moved_to(copy)
        return self._cache_tensor(computing)

    def _cache_tensor(self, block: Any) -> CacheTensor:
        stage = Stage(self, None, str(self.sch.get(block).name_hint), block)
        self.stages.append(stage)
        written = tvm_compat.region_buffer(self.sch.get(block).writes[0])
        return CacheTensor(stage, str(written.name))

    def _buffer_name(self, tensor: Any) -> str:
        if isinstance(tensor, CacheTensor):
            return tensor.name
        return str(tensor.op.name)

    def normalize(self) -> TESchedule:
        """TensorIR loops start at zero already."""
        return self

    def __getattr__(self, name: str) -> Any:
        if name in SCHEDULE_WITHOUT_COUNTERPART:
            raise TEScheduleError(
                f"s.{name} has no TensorIR counterpart in course mode",
                hint=SCHEDULE_WITHOUT_COUNTERPART[name],
            )
        raise AttributeError(f"TE schedule has no attribute {name!r}")

    # -- the function -----------------------------------------------------------------------------
    @property
    def mod(self) -> Any:
        """The scheduled module (every tensor the schedule computes a parameter or a buffer)."""
        return self.sch.mod

    @property
    def trace(self) -> Any:
        """The TensorIR steps the TE code became."""
        return self.sch.trace

    def lowered(self, args: Iterable[Any] | None, name: str = "main") -> Any:
        """The scheduled function taking ``args`` (default: the inputs, then the outputs)."""
        func = self.function(self._args(args))
        return tvm_compat.ir_module_type()({name: func.with_attr("global_symbol", name)})

    def for_build(self, args: Iterable[Any] | None, name: str) -> tuple[Any, list[Any]]:
        """The module to build for ``args`` and the tensors it takes after them: the results
        nothing reads that ``args`` leave out (their computation would be dropped otherwise)."""
        given = self._args(args)
        scratch = [t for t in self.sinks if not any(_same_tensor(t, g) for g in given)]
        func = self.function([*given, *scratch]).with_attr("global_symbol", name)
        shapes = [(tuple(int(d) for d in t.shape), str(t.dtype)) for t in scratch]
        return tvm_compat.ir_module_type()({name: func}), shapes

    def _args(self, args: Iterable[Any] | None) -> list[Any]:
        if args is None:
            return [*self.placeholders, *self.sinks]
        tensor = tvm_compat.tvm().te.Tensor
        given = list(args)
        for arg in given:
            if not isinstance(arg, tensor):
                raise TEScheduleError(
                    f"the arguments of a TE schedule are its tensors, not a {type(arg).__name__}",
                    hint="list the tensors the function takes: tvm.lower(s, [A, B, C])",
                )
        return given

    def function(self, tensors: list[Any]) -> Any:
        """The scheduled PrimFunc taking ``tensors``; the other buffers are its own."""
        func = self.sch.mod["main"]
        root = func.body.block
        buffers = {str(b.name): b for b in [*func.params, *root.alloc_buffers]}
        chosen = []
        for tensor in tensors:
            name = self._buffer_name(tensor)
            if name not in buffers:
                raise TEScheduleError(
                    f"{name} is not a tensor of the scheduled function (inlined?)",
                    hint="a tensor inlined by compute_inline is no longer computed: leave it out "
                    "of the arguments",
                )
            chosen.append(buffers[name])
        return tvm_compat.with_parameters(func, chosen)

    def __repr__(self) -> str:
        names = ", ".join(s.name for s in self.stages)
        return f"<TE schedule on TensorIR: stages {names}>"


class CacheTensor:
    """What ``cache_read`` / ``cache_write`` return: index the schedule with it (``s[AA]``);
    ``AA.op.axis`` / ``AA.op.reduce_axis`` are its block's loops."""

    def __init__(self, stage: Stage, name: str) -> None:
        self.stage = stage
        self.name = name
        self.op = _CacheOp(stage)

    def __repr__(self) -> str:
        return f"<cache tensor {self.name}>"


class _CacheOp:
    def __init__(self, stage: Stage) -> None:
        self.stage = stage
        self.name = stage.name

    @property
    def axis(self) -> list[Any]:
        return self.stage.own_loops()[: self.stage.spatial_count()]

    @property
    def reduce_axis(self) -> list[Any]:
        return self.stage.own_loops()[self.stage.spatial_count() :]


class Stage:
    """``s[C]``: the block of ``C`` and the primitives of the old stage, each applied to the
    TensorIR schedule at once."""

    def __init__(self, schedule: TESchedule, op: Any, name: str, block: Any = None) -> None:
        self.schedule, self.op, self.name = schedule, op, name
        self._block = block
        self._loops: list[Any] | None = None
        self.iter_vars = [*op.axis, *op.reduce_axis] if op is not None else []

    @property
    def sch(self) -> Any:
        return self.schedule.sch

    def block(self) -> Any:
        if self._block is None:
            self._block = tvm_compat.get_block(self.sch, self.name)
            remember_names({f"block_{self.name}": self._block})
        return self._block

    def own_loops(self) -> list[Any]:
        """The loops of the block's own iterators, innermost last (after any compute_at)."""
        if self._loops is None:
            block = self.block()
            count = len(self.sch.get(block).iter_vars)
            self._loops = list(self.sch.get_loops(block))[-count:] if count else []
            names = [str(v.var.name) for v in self.iter_vars]
            if len(names) == len(self._loops):
                remember_names(dict(zip(names, self._loops, strict=True)))
        return self._loops

    def spatial_count(self) -> int:
        kinds = [int(v.iter_type) for v in self.sch.get(self.block()).iter_vars]
        return kinds.count(0)  # 0: a data-parallel (spatial) iterator

    def index_of(self, axis: Any) -> int | None:
        return next((i for i, v in enumerate(self.iter_vars) if v.same_as(axis)), None)

    def moved_to(self, block: Any) -> None:
        """After ``cache_write``: this stage is the copy ``block``, with the spatial iter vars."""
        self._block, self._loops = block, None
        self.name = str(self.sch.get(block).name_hint)
        self.iter_vars = list(self.op.axis) if self.op is not None else []

    def _refresh(self) -> None:
        self._loops = None

    def _replace(self, loops: list[Any], by: str) -> None:
        self.schedule.replaced.extend((loop, by) for loop in loops)

    # -- primitives -------------------------------------------------------------------------------
    def split(self, parent: Any, factor: Any = None, nparts: Any = None) -> tuple[Any, Any]:
        """``split(x, factor=f)`` -> ``sch.split(x, [None, f])``; ``nparts=n`` -> ``[n, None]``."""
        if (factor is None) == (nparts is None):
            raise TEScheduleError("split takes one of factor= and nparts=")
        loop = self.schedule.loop(parent)
        factors = [None, factor] if factor is not None else [nparts, None]
        outer, inner = self.sch.split(loop, factors, preserve_unit_iters=True)
        self._replace([loop], "split")
        return outer, inner

    def tile(self, x_parent: Any, y_parent: Any, x_factor: Any, y_factor: Any) -> tuple[Any, ...]:
        """Two splits and a reorder: ``xo, yo, xi, yi``."""
        xo, xi = self.split(x_parent, factor=x_factor)
        yo, yi = self.split(y_parent, factor=y_factor)
        self.reorder(xo, yo, xi, yi)
        return xo, yo, xi, yi

    def fuse(self, *args: Any) -> Any:
        loops = [self.schedule.loop(a) for a in args]
        if len(loops) == 1:
            return loops[0]
        fused = self.sch.fuse(*loops, preserve_unit_iters=True)
        self._replace(loops, "fused")
        return fused

    def reorder(self, *args: Any) -> None:
        self.sch.reorder(*[self.schedule.loop(a) for a in args])

    def parallel(self, var: Any) -> None:
        self.sch.parallel(self.schedule.loop(var))

    def vectorize(self, var: Any) -> None:
        self.sch.vectorize(self.schedule.loop(var))

    def unroll(self, var: Any) -> None:
        self.sch.unroll(self.schedule.loop(var))

    def bind(self, ivar: Any, thread_ivar: Any) -> None:
        """``bind(x, te.thread_axis("threadIdx.x"))`` -> ``sch.bind(x, "threadIdx.x")``."""
        tag = getattr(thread_ivar, "thread_tag", thread_ivar)
        self.sch.bind(self.schedule.loop(ivar), str(tag))

    def pragma(self, var: Any, pragma_type: str, pragma_value: Any = None) -> None:
        """``pragma(x, "auto_unroll_max_step", 16)`` -> ``sch.annotate(x, "pragma_...", 16)``."""
        value = 1 if pragma_value is None else pragma_value
        self.sch.annotate(self.schedule.loop(var), f"pragma_{pragma_type}", value)

    def storage_align(self, axis: Any, factor: int, offset: int) -> None:
        """``storage_align(x, f, o)`` -> ``sch.storage_align(block, 0, index of x, f, o)``."""
        index = self.index_of(axis)
        if index is None:
            raise TEScheduleError("storage_align takes an axis of this stage's op.axis")
        self.sch.storage_align(self.block(), 0, index, factor, offset)

    def compute_at(self, parent: Any, scope: Any) -> None:
        """``compute_at(s[D], x)`` -> ``sch.compute_at(block, x)`` (``reverse_compute_at`` for a
        stage that consumes what is computed under ``x``, which TE attached the same way)."""
        loop = self.schedule.loop(scope)
        try:
            self.sch.compute_at(self.block(), loop, preserve_unit_loops=True)
        except Exception as first:  # noqa: BLE001 - TVM's schedule errors; try the consumer form
            try:
                self.sch.reverse_compute_at(self.block(), loop, preserve_unit_loops=True)
            except Exception:  # noqa: BLE001 - report why the producer form failed
                raise first from None
        self._refresh()

    def compute_inline(self) -> None:
        self.sch.compute_inline(self.block())

    def __getattr__(self, name: str) -> Any:
        if name in STAGE_WITHOUT_COUNTERPART:
            raise TEScheduleError(
                f"{name} has no TensorIR counterpart in course mode",
                hint=STAGE_WITHOUT_COUNTERPART[name],
            )
        raise AttributeError(f"TE stage has no attribute {name!r}")

    def __repr__(self) -> str:
        return f"<stage {self.name}: block {self.name!r} of the TensorIR schedule>"
