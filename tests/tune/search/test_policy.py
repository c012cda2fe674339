"""The measuring policy decides how long each tuning candidate is timed (a fake clock, no TVM)."""

from __future__ import annotations

from mlc_jupyter.tune.search import policy
from mlc_jupyter.tune.search.policy import measure


class FakeClock:
    """A kernel that takes ``steady_s`` a call, whose first plain call reads ``first_s``."""

    def __init__(self, steady_s: float, first_s: float | None = None, probe_s: float | None = None):
        self.steady_s = steady_s
        self.first_s = steady_s if first_s is None else first_s
        self.probe_s = steady_s if probe_s is None else probe_s
        self.calls: list[tuple] = []

    def first_call(self) -> float:
        self.calls.append(("first",))
        return self.first_s

    def probe(self) -> float:
        self.calls.append(("probe",))
        return self.probe_s

    def repeats(self, number: int, repeat: int) -> list[float]:
        self.calls.append(("repeats", number, repeat))
        return [self.steady_s] * repeat

    def seconds_spent(self) -> float:
        """Kernel time the measurement cost, one-time costs aside."""
        return sum(c[1] * c[2] * self.steady_s for c in self.calls if c[0] == "repeats")


def test_the_first_candidate_of_a_task_is_timed_as_long_as_metaschedules_runner_times():
    clock = FakeClock(0.004)
    secs, early = measure(clock, best=None)
    assert not early and secs == [0.004] * policy.REPEATS
    assert clock.calls[-1][0] == "repeats"
    assert abs(clock.seconds_spent() - policy.CONTENDER_BUDGET_S) < 0.01


def test_a_candidate_far_slower_than_the_best_keeps_its_one_reading():
    clock = FakeClock(0.010)
    secs, early = measure(clock, best=0.001)
    assert early and secs == [0.010]
    assert clock.calls == [("first",)]  # no further call of a slow kernel


def test_a_first_reading_a_little_over_the_best_is_not_cut():
    # a single reading overstates the steady time, so the cut is generous
    clock = FakeClock(0.001, first_s=0.0025)
    secs, early = measure(clock, best=0.0011)
    assert not early and secs == [0.001] * policy.REPEATS


def test_a_call_slower_than_half_a_second_is_never_repeated_even_as_the_first():
    clock = FakeClock(0.8)
    secs, early = measure(clock, best=None)
    assert early and secs == [0.8] and clock.calls == [("first",)]


def test_a_call_too_short_for_a_plain_timer_is_probed_before_the_decision():
    clock = FakeClock(0.0001, first_s=0.0015, probe_s=0.0001)
    measure(clock, best=0.00001)
    assert clock.calls[:2] == [("first",), ("probe",)]
    assert clock.calls == [("first",), ("probe",)]  # the probe showed it is 10x slower: cut


def test_a_candidate_between_contender_and_cut_is_timed_briefly():
    clock = FakeClock(0.002)
    secs, early = measure(clock, best=0.001)  # 2x the best: neither cut nor a contender
    assert not early and len(secs) == policy.REPEATS
    assert len([c for c in clock.calls if c[0] == "repeats"]) == 1
    assert clock.seconds_spent() <= policy.BRIEF_BUDGET_S


def test_a_brief_timing_that_reveals_a_contender_is_followed_by_a_long_one():
    clock = FakeClock(0.001, first_s=0.003)  # a slow first call, then faster than the best
    secs, early = measure(clock, best=0.0012)
    brief, long = [c for c in clock.calls if c[0] == "repeats"]
    assert long[1] > brief[1]
    assert not early and secs == [0.001] * policy.REPEATS


def test_calls_per_repeat_stay_within_bounds():
    assert policy.calls_for(0.1, 1e-12) == policy.MAX_NUMBER
    assert policy.calls_for(0.1, 10.0) == 1
    assert policy.calls_for(0.03, 0.001, repeat=3) == 10
