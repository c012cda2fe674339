"""The register check both CPU spaces share: a postprocessor that rejects a candidate whose
register tile would spill (and one that rejects decisions that do not fit together).

The matmul and the direct-convolution space each sample their register tile first, rows then
vectors (their first two ``sample_categorical`` decisions), and each has its rule of what fits
(accumulators and what else the loop keeps in registers). MetaSchedule runs the postprocessor on
every candidate it samples or mutates, so a tile that would spill is never compiled or measured.
This module imports TVM at import time; import it lazily.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...tvm_compat import derived_object, metaschedule

#: ``fits(rows, vectors)``: whether a register tile of ``rows x vectors`` fits a space's rule.
TileRule = Callable[[int, int], bool]


def sampled_values(sch: Any) -> list[int]:
    """The values of a sampled schedule's categorical decisions, in the order it sampled them."""
    values = []
    for inst in sch.trace.insts:
        if inst.kind.name == "SampleCategorical":
            decision = sch.trace.decisions.get(inst)
            if decision is not None:
                values.append(int(inst.attrs[0][int(decision)]))
    return values


def sampled_tile(sch: Any) -> tuple[int, int]:
    """The rows and vectors of a sampled schedule's register tile (its first two categorical
    decisions; ``(1, 1)`` before both are sampled)."""
    values = sampled_values(sch)
    return (values[0], values[1]) if len(values) >= 2 else (1, 1)


@derived_object
class TileFitsRegisters(metaschedule().postproc.PyPostproc):
    """Reject candidates whose register tile does not fit: ``fits(rows, vectors)`` says."""

    def __init__(self, fits: TileRule) -> None:
        super().__init__()
        self.fits = fits

    def _initialize_with_tune_context(self, context: Any) -> None:
        pass

    def apply(self, sch: Any) -> bool:
        return bool(self.fits(*sampled_tile(sch)))

    def clone(self) -> Any:
        return TileFitsRegisters(self.fits)


@derived_object
class SampledFit(metaschedule().postproc.PyPostproc):
    """Reject candidates whose categorical decisions (:func:`sampled_values`) ``fits`` refuses
    together: a space whose choices depend on each other (a Winograd kernel's register tile and
    its jobs) samples each on its own, so some of its draws are not schedules worth timing."""

    def __init__(self, fits: Callable[[list[int]], bool]) -> None:
        super().__init__()
        self.fits = fits

    def _initialize_with_tune_context(self, context: Any) -> None:
        pass

    def apply(self, sch: Any) -> bool:
        return bool(self.fits(sampled_values(sch)))

    def clone(self) -> Any:
        return SampledFit(self.fits)
