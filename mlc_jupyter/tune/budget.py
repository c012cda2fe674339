"""How long a tuning run goes on: a number of trials, a time, or until the search has converged.

``%mlc_tune MOD`` tunes for at most :data:`DEFAULT_TIME_S` and stops earlier when the search has
converged; ``--time 10m`` sets the time, ``--trials N`` a count (with both, whichever comes first;
a count alone runs all of it). The run stops after the round in flight.

*Converged* means: the task has at least :data:`CONVERGE_MIN_TRIALS` records (the cost model
predicts at random until it has 100, so earlier plateaus mean nothing), this run has measured at
least one round, and the best latency improved by less than :data:`CONVERGED_GAIN` over the
last :data:`WINDOW_SHARE` of all records (at least :data:`WINDOW_MIN`). A run with several tasks
has converged when each of them has. The improvements of a search come in steps that get rarer;
requiring the window to grow with the run means a long run needs a long quiet stretch to stop.

A run's time is one :class:`Deadline`, made once from its budget (:meth:`Budget.start`) and
passed down: a whole model's tasks get slots of it (:meth:`Deadline.within`), and the search's
builder, runner and callback ask it whether time is up. It is the only clock in ``tune/`` that
says so (``tests/test_layers.py`` checks).

Importing this module does not import TVM.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from time import perf_counter

from ..errors import TuneError

#: The time a tune without ``--trials`` or ``--time`` may take at most, in seconds.
DEFAULT_TIME_S = 600.0
#: Records a task needs before its search can count as converged.
CONVERGE_MIN_TRIALS = 256
#: An improvement of the best latency smaller than this share is no improvement.
CONVERGED_GAIN = 0.01
#: The window of records that must bring no improvement: this share of all records ...
WINDOW_SHARE = 1 / 3
#: ... and at least this many (three rounds of 64).
WINDOW_MIN = 192

_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


@dataclass(frozen=True)
class Budget:
    """A run's limits: ``trials`` and/or ``time_s`` (``None``: no limit of that kind), and
    whether it stops when the search has converged."""

    trials: int | None
    time_s: float | None
    converge: bool

    def start(self) -> Deadline:
        """The run's deadline, its time counted from now (none when the budget has no time)."""
        return Deadline(self.time_s)

    def describe(self) -> str:
        parts = []
        if self.trials is not None:
            parts.append(f"{self.trials} trials")
        if self.time_s is not None:
            parts.append(f"at most {duration_text(self.time_s)}")
        if self.converge:
            parts.append("or until converged")
        return " ".join(parts)


class Deadline:
    """The moment a tuning run's time is up: the one clock that says so.

    ``seconds`` is how long it was given (``None``: no time limit, and it never passes); a slot
    of it (:meth:`within`) never ends after it.
    """

    def __init__(self, seconds: float | None = None) -> None:
        self.seconds = seconds
        self._at = None if seconds is None else perf_counter() + seconds

    @property
    def limited(self) -> bool:
        return self._at is not None

    def left_s(self) -> float:
        """Seconds until the deadline (negative once it passed; infinite without a limit)."""
        return math.inf if self._at is None else self._at - perf_counter()

    def passed(self) -> bool:
        return self.left_s() <= 0

    def within(self, seconds: float | None) -> Deadline:
        """A slot of this run: ``seconds`` from now (``None``: the rest), never past this one."""
        slot = Deadline(seconds)
        if self._at is not None and (slot._at is None or slot._at > self._at):
            slot._at = self._at
            slot.seconds = max(0.0, self.left_s())
        return slot


def parse_duration(text: str | float | int) -> float:
    """Seconds from ``"10m"``, ``"90s"``, ``"1.5h"``, ``"1m30s"`` or a plain number of seconds."""
    if isinstance(text, int | float):
        seconds = float(text)
    else:
        spec = str(text).strip().lower().replace(" ", "")
        parts = re.findall(r"(\d+(?:\.\d+)?)(h|min|m|s|)", spec)
        if not parts or "".join(n + u for n, u in parts) != spec:
            raise TuneError(
                f"--time expects a duration like 10m, 90s or 1h30m, got {text!r}",
                hint="units: s, m (or min), h; a plain number is seconds",
            )
        seconds = sum(float(number) * _UNITS[unit] for number, unit in parts)
    if seconds <= 0:
        raise TuneError(f"--time must be more than zero, got {text!r}")
    return seconds


def duration_text(seconds: float) -> str:
    """``600`` -> ``"10m"``, ``90`` -> ``"1m30s"``."""
    whole = round(seconds)
    minutes, secs = divmod(whole, 60)
    if not minutes:
        return f"{secs}s"
    return f"{minutes}m" + (f"{secs:02d}s" if secs else "")


def budget_for(trials: int | None, time: str | float | None) -> Budget:
    """The budget of ``--trials`` / ``--time``: the default time with convergence when neither."""
    if trials is not None and trials < 1:
        raise TuneError(f"--trials must be at least 1, got {trials}")
    time_s = parse_duration(time) if time is not None else None
    if trials is None and time_s is None:
        return Budget(None, DEFAULT_TIME_S, converge=True)
    return Budget(trials, time_s, converge=trials is None)


def best_at(curve: Sequence[tuple[int, float]], trial: int) -> float | None:
    """The best latency after ``trial`` records, from a curve of improvements."""
    best = None
    for count, latency in curve:
        if count > trial:
            break
        best = latency
    return best


def has_converged(curve: Sequence[tuple[int, float]], records: int, new: int, round_: int) -> bool:
    """Whether a task's search has converged (see the module docstring)."""
    if records < CONVERGE_MIN_TRIALS or new < round_ or not curve:
        return False
    window = max(WINDOW_MIN, int(records * WINDOW_SHARE))
    before = best_at(curve, records - window)
    now = curve[-1][1]
    return before is not None and before <= now * (1 + CONVERGED_GAIN)


#: The least time a whole model's tuned task gets, in seconds.
MIN_TASK_TIME_S = 20.0
#: The fewest trials a whole model's tuned task gets (about two small rounds of the search); a
#: task's minimum slot is long enough to measure them at the run's pace.
MIN_TASK_TRIALS = 16
#: Seconds a candidate costs (compile and measure) before a run has measured any.
PRIOR_CANDIDATE_S = 1.0
#: Seconds a task costs beyond its search (seeding, re-timing the top records, the comparison)
#: before a run has tuned any.
PRIOR_OVERHEAD_S = 5.0
#: A task's first round takes at most this share of its search time, so that a round of slow
#: candidates cannot use up the slot before the cost model has learned anything.
FIRST_ROUND_SHARE = 0.5
#: Time kept free at the end of a model's budget beyond the final timing's estimate.
END_MARGIN_SHARE = 0.02
#: A task whose part of the time left is under this share of a minimum slot is not tuned: its
#: slot would be mostly the minimum, taken from larger tasks.
WORTH_SLOT_SHARE = 0.5
#: A search limited by time stops after a round when less than this share of that round's time
#: is left: the next round's candidates would be generated and compiled, then cut off unmeasured.
ROUND_FIT_SHARE = 0.5


def next_round_fits(left_s: float, round_s: float) -> bool:
    """Whether a search with ``left_s`` seconds left should start another round like the last
    one (``round_s`` seconds: generating, compiling and measuring its candidates)."""
    return left_s >= ROUND_FIT_SHARE * round_s


@dataclass
class TimeLedger:
    """Where a whole model's time goes: its deadline, what the end needs, and the pace so far.

    ``deadline`` is the run's; ``final_s`` the time kept for the end (building the tuned model
    and timing it against the default). Each tuned task is noted (:meth:`note`) so the next slot
    is sized at the pace this run measures.
    """

    deadline: Deadline
    final_s: float = 0.0
    searched_s: float = 0.0
    candidates: int = 0
    overhead_s: float = 0.0
    tasks: int = 0

    def candidate_s(self) -> float:
        """Seconds a candidate costs in this run (the prior until some were measured)."""
        if self.candidates < MIN_TASK_TRIALS:
            return PRIOR_CANDIDATE_S
        return self.searched_s / self.candidates

    def task_overhead_s(self) -> float:
        """Seconds a task costs beyond its search (the prior until a task was tuned)."""
        return self.overhead_s / self.tasks if self.tasks else PRIOR_OVERHEAD_S

    def min_slot_s(self) -> float:
        """The shortest slot worth giving a task: its overhead and ``MIN_TASK_TRIALS`` trials."""
        return max(MIN_TASK_TIME_S, self.task_overhead_s() + MIN_TASK_TRIALS * self.candidate_s())

    def left_s(self) -> float:
        """Seconds left for tasks: up to the deadline, less the end's time and a margin."""
        if not self.deadline.limited:
            return math.inf
        margin = END_MARGIN_SHARE * (self.deadline.seconds or 0.0)
        return self.deadline.left_s() - self.final_s - margin

    def note(self, searched_s: float, new: int, task_s: float) -> None:
        """One task tuned: ``new`` candidates in ``searched_s``, ``task_s`` in all."""
        self.searched_s += searched_s
        self.candidates += new
        self.overhead_s += max(0.0, task_s - searched_s)
        self.tasks += 1


def slot_s(shares: Sequence[float], left_s: float, min_slot_s: float) -> float:
    """The seconds of the first of the tasks still to tune (``shares``: this task's share of
    the latency, then the others', largest first), ``0.0`` when no slot fits.

    Each task gets its part of ``left_s`` by share, but at least ``min_slot_s``. The smallest
    shares get none (they keep their default schedule) when not all of them fit a minimum slot,
    and when their part of the time is under :data:`WORTH_SLOT_SHARE` of one: a minimum slot
    given to a task that small would be taken from the tasks the latency is made of. The last
    task kept takes all the time left (fewer trials than a minimum slot's, when that is all
    there is, rather than none). So the slots given never add up to more than ``left_s``.
    """
    count = len(shares)
    while count > 1 and _smallest_left_out(shares[:count], left_s, min_slot_s):
        count -= 1
    if count == 1:  # the last task worth a slot takes all that is left, if that is worth it
        return left_s if left_s >= WORTH_SLOT_SHARE * min_slot_s else 0.0
    kept = shares[:count]
    total = sum(kept)
    part = kept[0] / total if total > 0 else 1.0 / count
    return min(max(min_slot_s, left_s * part), left_s - (count - 1) * min_slot_s)


def _smallest_left_out(kept: Sequence[float], left_s: float, min_slot_s: float) -> bool:
    """Whether the last of ``kept`` gets no slot: they do not all fit a minimum slot, or its
    part of the time is too small to be worth one."""
    if len(kept) * min_slot_s > left_s:
        return True
    total = sum(kept)
    part = kept[-1] / total if total > 0 else 1.0 / len(kept)
    return left_s * part < WORTH_SLOT_SHARE * min_slot_s


def round_size(search_s: float, candidate_s: float, low: int, high: int) -> int:
    """Candidates per round of a task with ``search_s`` seconds: a first round takes at most
    ``FIRST_ROUND_SHARE`` of them at ``candidate_s`` a candidate, within ``[low, high]``."""
    fits = int(search_s * FIRST_ROUND_SHARE / max(candidate_s, 1e-3))
    return max(low, min(high, fits))
