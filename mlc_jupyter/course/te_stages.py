"""The stages of a legacy TE schedule on TensorIR (:mod:`.te_schedule`): ``s[C]`` is the block of
``C``, its iter vars that block's loops, and each primitive of the old stage the TensorIR one."""

from __future__ import annotations

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

    def __init__(self, schedule: Any, op: Any, name: str, block: Any = None) -> None:
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
