"""How long a tune runs: durations, budgets, and when a search counts as converged (no TVM)."""

from __future__ import annotations

import pytest

from mlc_jupyter.errors import TuneError
from mlc_jupyter.tune.budget import (
    CONVERGE_MIN_TRIALS,
    DEFAULT_TIME_S,
    budget_for,
    duration_text,
    has_converged,
    parse_duration,
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
