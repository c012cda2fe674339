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
from .te_stages import CacheTensor, Stage

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
