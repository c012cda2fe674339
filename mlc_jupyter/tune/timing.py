"""Time the untuned and the tuned module the same way, so the speed-up compares like with like.

Timing is the shared :func:`mlc_jupyter.measure.time_module` (cached build, ``time_evaluator``
with calibrated loops, median of 5), run on the tuner's measuring thread so kernels get the
target's ``num-cores`` threads, exactly as the candidates did.
"""

from __future__ import annotations

from typing import Any

from ..errors import MLCError


def _median(mod: Any, target: Any, name: str) -> float:
    from ..measure import time_module

    timing = time_module(mod, target, func_name=name)
    if timing.median_s is None:
        raise MLCError(f"timing {name} failed: {timing.error}")
    return float(timing.median_s)


def _on_measure_thread(target: Any, fn: Any, *args: Any) -> Any:
    from .workers import on_measure_thread, target_cores

    return on_measure_thread(target_cores(target), fn, *args)


def time_tir(mod: Any, target: Any, name: str = "main") -> float:
    """Median seconds of one call of ``mod[name]`` built for ``target``, on the host CPU."""
    return _on_measure_thread(target, _median, mod, target, name)


def time_relax(mod: Any, target: Any) -> float | None:
    """Median seconds of one call of the Relax ``main`` (``None`` when it cannot be timed)."""
    try:
        return _on_measure_thread(target, _median, mod, target, "main")
    except MLCError:
        return None
