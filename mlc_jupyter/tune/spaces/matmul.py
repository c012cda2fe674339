"""A BLIS-like search space for matmul-like TensorIR kernels on CPUs.

The structure (an ``mr x nr`` register micro-kernel, ``B`` in panels one vector wide, cache
blocking above it, three variants of where ``B`` is packed) is ``compilation/matmul_schedule.py``'s,
which a default build replays with its decisions chosen by rule; here MetaSchedule samples them:
``mr`` and the number of vectors in ``nr`` among shapes that divide the matrix
(``sample_categorical``), the cache tiles and the ``k`` unroll with ``sample_perfect_tile``. The
postprocessor both CPU spaces share (:mod:`.register_fit`) rejects micro-kernels that do not fit
the vector registers (the convolution's rule, ``fits_registers``: on AVX2, 4 x 3 leaves LLVM no
spare register and ran slower than 4 x 2). A workload is *matmul-like* when the structure applies
to it without error; everything else keeps MetaSchedule's default space.

This module imports TVM at import time; import it lazily.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from ...compilation.conv_schedule import VectorUnit, fits_registers, vector_unit
from ...compilation.default_schedule import LAYOUT_FREE_ATTR
from ...compilation.matmul_schedule import (
    VARIANTS,
    NotMatmul,
    contraction,
    matmul_roles,
    schedule_matmul,
    weight_b,
)
from ...tvm_compat import Schedule, metaschedule
from .register_fit import TileFitsRegisters


def design_spaces(unit: VectorUnit) -> Any:
    """The schedule function of the space: one traced schedule per variant."""

    def spaces(sch: Any) -> list[Any]:
        out = []
        for variant in ("no-pack",) if _weight_b(sch) else VARIANTS:
            copy = sch.copy()
            schedule_matmul(copy, variant, unit)
            out.append(copy)
        return out

    return spaces


def _weight_b(sch: Any) -> bool:
    """Whether ``B`` is a weight the build packs (:func:`.matmul_schedule.weight_b`)."""
    return weight_b(sch, LAYOUT_FREE_ATTR)


def is_matmul_like(mod: Any, target: Any) -> bool:
    """Whether :func:`design_spaces` schedules ``mod`` (its one PrimFunc ``main``) for ``target``."""
    try:
        sch = Schedule(mod)
        block = contraction(sch)
        dtype = matmul_roles(sch, block).dtype
        for variant in VARIANTS:
            schedule_matmul(Schedule(mod), variant, vector_unit(target, dtype))
    except NotMatmul:
        return False
    except Exception:  # noqa: BLE001 - a schedule primitive refused: not this space's kind
        return False
    return True


def space_generator(mod: Any, target: Any) -> Any:
    """MetaSchedule's ``ScheduleFn`` over :func:`design_spaces`, with the default CPU
    postprocessors and mutators plus the register check."""
    ms = metaschedule()
    sch = Schedule(mod)
    unit = vector_unit(target, matmul_roles(sch, contraction(sch)).dtype)
    postprocs = [
        *ms.postproc.Postproc.create("llvm"),
        TileFitsRegisters(partial(fits_registers, registers=unit.registers)),
    ]
    return ms.space_generator.ScheduleFn(
        design_spaces(unit),
        sch_rules=[],
        postprocs=postprocs,
        mutator_probs=ms.mutator.Mutator.create("llvm"),
    )
