"""Re-time a replayed module through the service behind ``%mlc_time``, checked against the original."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..compilation import resolve_target
from ..errors import MLCError
from ..measure import time_module
from ..measure.gpu_limits import device_limits
from ..measure.machine import kernel_cores
from ..measure.timer import argument_dtypes


@dataclass(frozen=True)
class TraceTiming:
    """One re-timing of a trace in the trace replay widget: its decisions and how fast it ran.

    ``decisions`` maps instruction index to the decision (plain Python values); ``correct`` is
    ``None`` when outputs were not compared; ``peak_fraction`` is the share of this machine's
    fp32 peak and ``intensity`` the FLOPs per argument byte (the roofline's axes).
    """

    decisions: dict[int, Any]
    latency_s: float | None
    gflops: float | None
    correct: bool | None
    error: str = ""
    trace: Any = None
    mod: Any = None
    peak_fraction: float | None = None
    intensity: float | None = None


def time_replayed(
    mod: Any, original: Any, target: Any, decisions: dict[int, Any], trace: Any
) -> TraceTiming:
    """Build and time ``mod`` (outputs compared with ``original``'s) as one history row.

    A build or run failure becomes a row with ``error`` set, so the history keeps it.
    """
    try:
        t = time_module(mod, target, ref=original)
    except MLCError as err:
        return TraceTiming(dict(decisions), None, None, None, str(err), trace, mod)
    resolved = resolve_target(target)
    limits = device_limits(resolved, argument_dtypes(mod))
    peak = limits.peak(kernel_cores(resolved)) if limits else None
    return TraceTiming(
        dict(decisions), t.median_s, t.gflops, t.correct, t.error or "", trace, mod,
        peak_fraction=t.gflops / peak if peak and t.gflops else None,
        intensity=t.intensity,
    )  # fmt: skip
