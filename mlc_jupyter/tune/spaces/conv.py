"""A direct-convolution search space for NHWC window kernels on CPUs.

The default build schedules every kernel whose single reduction writes an NHWC tensor
(convolutions, depthwise and 1x1 ones, pooling, means over H and W) with one structure,
:mod:`mlc_jupyter.compilation.conv_schedule`: output channels in vector registers, a row of pixels
blocked, the epilogue fused into the write-back, the weights packed by ``RewriteLayout`` in the
order the tile reads them. This space is that structure with its sizes left to MetaSchedule, the
way :mod:`.matmul` does for matmul:

* the row block ``mr`` and the channel vectors ``nv`` (``sample_categorical`` over the divisors of
  the width and of the channel vectors), and the unrolled run of the innermost reduction loop
  (``sample_perfect_tile``);
* two variants, one design space each (:data:`~mlc_jupyter.compilation.conv_schedule.ORDERS`):
  channel blocks or rows of pixels outermost in the parallel loop;
* the postprocessor both CPU spaces share (:mod:`.register_fit`) rejects tiles whose
  accumulators, weight vectors and broadcast do not fit the vector registers (they would spill);
  MetaSchedule's CPU postprocessors and mutators do the rest.

A Winograd kernel (a 3x3 stride-1 convolution the default build computes with Winograd,
:mod:`mlc_jupyter.compilation.winograd`) gets that kernel's structure with its matrix products'
register tile sampled (tiles among the divisors of a row of tiles or spanning whole rows,
channel vectors, the unrolled run of the reduction), its parallel jobs (one row of tiles or
all of them, all the output channels or half) and, for a large transformed weight, the caches
its next slice is prefetched into, under the same register check and one that rejects a
register tile that does not divide its job's tiles.

The default build's schedule is one point of this space (its trace replays here), so a model's
tuning starts from it. This module imports TVM at import time; import it lazily.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from ...compilation import is_cpu
from ...compilation.conv_schedule import (
    ORDERS,
    NotWindow,
    VectorUnit,
    find_window,
    fits_registers,
    schedule_window,
    vector_unit,
)
from ...compilation.winograd import sampled_fit, schedule_winograd, tile_of
from ...tvm_compat import Schedule, metaschedule
from .register_fit import SampledFit, TileFitsRegisters


def design_spaces(unit: VectorUnit) -> Any:
    """The schedule function of the space: one traced schedule per variant."""

    def spaces(sch: Any) -> list[Any]:
        out = []
        for order in ORDERS:
            copy = sch.copy()
            schedule_window(copy, unit, order=order)
            out.append(copy)
        return out

    return spaces


def is_window_like(mod: Any, target: Any) -> bool:
    """Whether :func:`design_spaces` schedules ``mod`` (its one PrimFunc ``main``) for ``target``."""
    if not is_cpu(target):
        return False
    try:
        dtype = find_window(Schedule(mod), 16).dtype
        unit = vector_unit(target, dtype)
        for order in ORDERS:
            schedule_window(Schedule(mod), unit, order=order)
    except NotWindow:
        return False
    except Exception:  # noqa: BLE001 - a schedule primitive refused: not this space's kind
        return False
    return True


def space_generator(mod: Any, target: Any) -> Any:
    """MetaSchedule's ``ScheduleFn`` over :func:`design_spaces`, with the default CPU
    postprocessors (``RewriteLayout`` packs the weights) and mutators plus the register check."""
    ms = metaschedule()
    unit = vector_unit(target, find_window(Schedule(mod), 16).dtype)
    fits = partial(fits_registers, registers=unit.registers)
    postprocs = [*ms.postproc.Postproc.create("llvm"), TileFitsRegisters(fits)]
    return ms.space_generator.ScheduleFn(
        design_spaces(unit),
        sch_rules=[],
        postprocs=postprocs,
        mutator_probs=ms.mutator.Mutator.create("llvm"),
    )


def is_winograd_kernel(mod: Any, target: Any) -> bool:
    """Whether ``mod``'s one PrimFunc ``main`` is a Winograd convolution for a CPU ``target``."""
    return is_cpu(target) and tile_of(mod["main"]) is not None


def winograd_space_generator(mod: Any, target: Any) -> Any:
    """MetaSchedule's ``ScheduleFn`` over the Winograd kernel's schedule with its register tile
    sampled, the default CPU postprocessors and mutators plus the register check."""
    ms = metaschedule()
    unit = vector_unit(target)

    def space(sch: Any) -> Any:
        schedule_winograd(sch, unit.lanes)
        return sch

    fits = partial(fits_registers, registers=unit.registers)
    fits_job = partial(sampled_fit, mod["main"])
    return ms.space_generator.ScheduleFn(
        space,
        sch_rules=[],
        postprocs=[
            *ms.postproc.Postproc.create("llvm"),
            TileFitsRegisters(fits),
            SampledFit(fits_job),
        ],
        mutator_probs=ms.mutator.Mutator.create("llvm"),
    )
