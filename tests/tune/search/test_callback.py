"""The time left a progress line shows: from the pace between batches, not the start's."""

from __future__ import annotations

import pytest

from mlc_jupyter.tune.search.callback import time_left


def test_the_time_left_follows_the_pace_after_the_first_batch():
    # the first batch of 4 ended at 60 s (the start: space, compiles, seed); then 4 per 10 s
    ends = [(60.0, 4), (70.0, 8), (80.0, 12)]
    left = time_left(ends, elapsed=80.0, fresh=12, now=80.0, done=12, total=32)
    assert left == pytest.approx(50.0)  # 20 trials at 2.5 s, not the whole run's 133 s
    # halfway into the next batch: what that batch has measured is already on its way
    assert time_left(ends, 85.0, 14, now=85.0, done=14, total=32) == pytest.approx(45.0)


def test_before_a_second_batch_the_whole_runs_pace_is_all_there_is():
    assert time_left([(60.0, 4)], elapsed=60.0, fresh=4, now=60.0, done=4, total=8) == 60.0
    assert time_left([], elapsed=5.0, fresh=0, now=5.0, done=0, total=8) is None
