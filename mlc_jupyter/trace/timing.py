"""Re-time a replayed module through the service behind ``%mlc_time``, checked against the original."""

from __future__ import annotations

from typing import Any

from ..errors import MLCError
from ..measure import time_module
from ..results import TraceTiming


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
    return TraceTiming(dict(decisions), t.median_s, t.gflops, t.correct, t.error or "", trace, mod)
