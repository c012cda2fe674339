"""A bench's samples: seconds per call by the clock it is given, taken one per contender a round."""

from __future__ import annotations

import time

from mlc_jupyter.measure.turns import calls_for, samples_in_turns


def _busy(seconds: float) -> None:
    start = time.thread_time()
    while time.thread_time() - start < seconds:
        pass


def test_cpu_time_per_call_leaves_out_waiting_and_counts_work():
    sleeping = calls_for(lambda: time.sleep(0.002), 0.02, time.thread_time)
    working = calls_for(lambda: _busy(0.002), 0.02, time.thread_time)
    (asleep,), (busy,) = samples_in_turns([sleeping, working], rounds=1)
    assert asleep < 0.0005  # a sleeping call uses next to no CPU time
    assert 0.0018 < busy < 0.01  # a call that works 2 ms of CPU time is counted as such


def test_each_sampler_gives_one_sample_a_round_in_order():
    order: list[str] = []
    samplers = [
        calls_for(lambda name=name: order.append(name), 0.001, time.perf_counter) for name in "ab"
    ]
    samples = samples_in_turns(samplers, rounds=3)
    assert [len(s) for s in samples] == [3, 3]
    changes = [x for i, x in enumerate(order) if i == 0 or order[i - 1] != x]
    assert changes == ["a", "b"] * 3  # a's calls, then b's, round after round
