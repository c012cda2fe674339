"""How long a tune runs: durations, budgets, and when a search counts as converged (no TVM)."""

from __future__ import annotations

import pytest

from mlc_jupyter.errors import TuneError
from mlc_jupyter.tune.budget import (
    CONVERGE_MIN_TRIALS,
    DEFAULT_TIME_S,
    MIN_TASK_TIME_S,
    MIN_TASK_TRIALS,
    PRIOR_CANDIDATE_S,
    Budget,
    Deadline,
    TimeLedger,
    budget_for,
    duration_text,
    has_converged,
    next_round_fits,
    parse_duration,
    round_size,
    slot_s,
)


def test_durations_read_like_people_write_them():
    assert parse_duration("10m") == 600
    assert parse_duration("90s") == parse_duration("1m30s") == parse_duration("90") == 90
    assert parse_duration("1.5h") == 5400
    assert duration_text(600) == "10m" and duration_text(90) == "1m30s"
    for bad in ("ten minutes", "10x", "", "0s"):
        with pytest.raises(TuneError, match="--time"):
            parse_duration(bad)


def test_the_default_budget_is_a_time_limit_that_stops_at_convergence():
    default = budget_for(None, None)
    assert default.trials is None and default.time_s == DEFAULT_TIME_S and default.converge
    assert budget_for(None, "2m").time_s == 120 and budget_for(None, "2m").converge
    trials = budget_for(64, None)
    assert trials.trials == 64 and trials.time_s is None and not trials.converge  # runs them all
    both = budget_for(64, "30s")
    assert both.trials == 64 and both.time_s == 30 and not both.converge
    with pytest.raises(TuneError, match="--trials must be at least 1"):
        budget_for(0, None)


def _curve(points):
    return [(trial, latency) for trial, latency in points]


def test_a_search_that_still_improves_has_not_converged():
    curve = _curve([(64, 10.0), (128, 8.0), (192, 6.0), (256, 5.0), (320, 4.5)])
    assert not has_converged(curve, records=320, new=320, round_=64)


def test_a_long_plateau_after_the_cost_model_learned_is_convergence():
    curve = _curve([(64, 10.0), (128, 5.0), (192, 5.0), (256, 4.99), (320, 4.99), (384, 4.99)])
    assert has_converged(curve, records=384, new=384, round_=64)
    # too few records overall: the cost model predicted at random for most of them
    assert not has_converged(curve[:3], records=CONVERGE_MIN_TRIALS - 64, new=192, round_=64)
    # a resumed run measures at least one round before it can stop
    assert not has_converged(curve, records=384, new=0, round_=64)


def test_the_window_grows_with_the_run():
    # 900 records: the window is a third of them, so a gain 250 records ago still counts
    curve = _curve([(64, 10.0), (650, 4.0), (700, 4.0), (900, 4.0)])
    assert not has_converged(curve, records=900, new=900, round_=64)
    assert has_converged(curve, records=1000, new=1000, round_=64)


def test_a_model_slot_is_its_share_of_the_time_left_but_at_least_the_minimum():
    assert slot_s([0.5, 0.3, 0.2], 1000.0, 20.0) == pytest.approx(500.0)
    # a small share still gets the minimum slot, and the others keep theirs
    assert slot_s([0.01, 0.99], 1000.0, 20.0) == 20.0


def test_a_short_budget_goes_to_the_kernel_the_latency_is_made_of():
    # the small kernels' parts (5 s each) are worth less than half a minimum slot: giving each
    # the minimum would leave the 80 % kernel a third of the time
    assert slot_s([0.8, 0.05, 0.05, 0.05, 0.05], 100.0, 20.0) == pytest.approx(100.0)
    assert slot_s([0.9, 0.05, 0.05], 100.0, 30.0) == pytest.approx(100.0)
    # with time enough, the same kernels all get a slot
    assert slot_s([0.8, 0.05, 0.05, 0.05, 0.05], 1000.0, 20.0) == pytest.approx(800.0)


def test_tasks_that_no_minimum_slot_fits_get_none_so_the_slots_never_overrun():
    # three tasks, time for two minimum slots: the smallest share is left out
    assert slot_s([0.6, 0.3, 0.1], 50.0, 20.0) == pytest.approx(30.0)
    assert slot_s([0.6], 9.0, 20.0) == 0.0
    # the last task takes what is left, even short of a minimum slot, rather than leave it unused
    assert slot_s([0.6], 15.0, 20.0) == pytest.approx(15.0)
    shares, left, given = [0.4, 0.3, 0.2, 0.1], 70.0, []
    while shares:
        given.append(slot_s(shares, left - sum(given), 20.0))
        shares = shares[1:]
    assert sum(given) <= 70.0 and given[-1] == 0.0


def test_the_first_round_of_a_short_slot_is_small_enough_to_fit_it():
    assert round_size(1000.0, 1.0, 8, 64) == 64
    assert round_size(40.0, 1.0, 8, 64) == 20
    assert round_size(10.0, 2.0, 8, 64) == 8


def test_the_ledger_learns_the_pace_and_keeps_the_end_s_time():
    ledger = TimeLedger(deadline=Deadline(100.0), final_s=10.0)
    assert ledger.candidate_s() == PRIOR_CANDIDATE_S
    assert ledger.min_slot_s() >= MIN_TASK_TIME_S
    assert 85.0 < ledger.left_s() < 90.0  # the end's 10 s and a margin kept free
    ledger.note(searched_s=60.0, new=4 * MIN_TASK_TRIALS, task_s=70.0)
    assert ledger.candidate_s() == pytest.approx(60.0 / (4 * MIN_TASK_TRIALS))
    assert ledger.task_overhead_s() == pytest.approx(10.0)
    assert TimeLedger(deadline=Deadline()).left_s() == float("inf")


def test_one_deadline_counts_down_from_the_budget_and_its_slots_never_outlast_it():
    run = Budget(None, 60.0, converge=False).start()
    assert run.limited and run.seconds == 60.0 and 59.0 < run.left_s() <= 60.0
    assert not run.passed()
    slot = run.within(20.0)
    assert slot.seconds == 20.0 and slot.left_s() <= 20.0
    longer = run.within(600.0)  # a slot longer than the run is cut at the run's end
    assert longer.seconds <= 60.0 and longer.left_s() <= 60.0
    assert Budget(64, None, converge=False).start().limited is False
    assert Deadline().within(20.0).seconds == 20.0  # a slot of an unlimited run: its own time
    assert Deadline(0.0).passed() and Deadline(-1.0).within(5.0).passed()


def test_a_search_stops_when_the_next_round_would_be_cut_off_at_the_deadline():
    assert next_round_fits(left_s=30.0, round_s=20.0)
    assert not next_round_fits(left_s=5.0, round_s=20.0)
