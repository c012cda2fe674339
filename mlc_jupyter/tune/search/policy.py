"""How long to time a tuning candidate: the measuring policy, apart from any clock or TVM.

A search measures hundreds of candidates; most are far slower than the best so far and need
one reading, while the few close to the best decide what the cost model learns and which
schedule wins, so they are timed as long as MetaSchedule's own runner times every candidate
(100 ms). :func:`measure` makes those decisions against a :class:`KernelClock`; the runner
gives it a clock over a compiled TVM function, the tests a fake one.
"""

from __future__ import annotations

from typing import Protocol

#: A candidate whose first call takes longer than this is timed by that call alone.
SLOW_CALL_S = 0.5
#: Below this, a plain Python call is too coarse to judge a candidate; the clock probes.
COARSE_CALL_S = 0.002
#: A candidate within this factor of the best so far is a contender and is timed precisely.
CONTENDER_FACTOR = 1.15
#: A candidate whose first reading is over this factor of the best so far keeps that reading.
#: A single reading overstates the steady time (docs/DEVELOPING.md, "Measuring candidates"),
#: so a tighter cut can drop a search's truly fastest candidate.
CUT_FACTOR = 3.0
#: Seconds spent timing a candidate that is neither cut nor a contender.
BRIEF_BUDGET_S = 0.025
#: Seconds spent timing a contender (MetaSchedule's runner times every candidate this long).
CONTENDER_BUDGET_S = 0.1
#: Repeats of a timed measurement; the runner reports each repeat's seconds per call.
REPEATS = 3
#: The most calls one repeat makes.
MAX_NUMBER = 100_000


class KernelClock(Protocol):
    """What the policy needs to time one kernel (seconds per call)."""

    def first_call(self) -> float:
        """Seconds of one plain call, the first one (includes one-time costs)."""
        ...

    def probe(self) -> float:
        """Seconds of one call measured finely (for calls too short for a plain timer)."""
        ...

    def repeats(self, number: int, repeat: int) -> list[float]:
        """``repeat`` readings, each the mean seconds per call over ``number`` calls."""
        ...


def calls_for(budget_s: float, estimate_s: float, repeat: int = REPEATS) -> int:
    """How many calls per repeat fit ``budget_s`` for a kernel of about ``estimate_s``."""
    return max(1, min(MAX_NUMBER, int(budget_s / repeat / max(estimate_s, 1e-9))))


def measure(
    clock: KernelClock,
    best: float | None,
    budget_s: float = BRIEF_BUDGET_S,
    slower_factor: float = CUT_FACTOR,
    contender_budget_s: float = CONTENDER_BUDGET_S,
) -> tuple[list[float], bool]:
    """Time one candidate; cut short when it is clearly slower than ``best`` (seconds per call).

    The first call is timed directly (a timer with a warm-up call would cost seconds for the
    worst candidates of a large workload). A candidate slower than ``slower_factor`` times the
    best so far, or than ``SLOW_CALL_S``, keeps that one reading. A contender (within
    ``CONTENDER_FACTOR`` of the best, or the first of its task) gets ``REPEATS`` repeats over
    ``contender_budget_s``, because the cost model and the search's parents come from the
    fastest records, a few percent apart. The rest get ``REPEATS`` repeats within ``budget_s``
    (and the contender's timing if those show it is one after all).

    Returns the per-repeat seconds and whether the measurement stopped early.
    """
    first = clock.first_call()
    if first < COARSE_CALL_S:
        first = clock.probe()
    if first > SLOW_CALL_S or (best is not None and first > slower_factor * best):
        return [first], True
    if best is None or first < CONTENDER_FACTOR * best:
        return clock.repeats(calls_for(contender_budget_s, first), REPEATS), False
    secs = clock.repeats(calls_for(budget_s, first), REPEATS)
    mean = sum(secs) / len(secs)
    if mean < CONTENDER_FACTOR * best:  # its first call was slow; it is a contender after all
        secs = clock.repeats(calls_for(contender_budget_s, mean), REPEATS)
    return secs, False
