"""Timing contenders in turns: one sample of each per round, so a slow spell hits them all alike.

A slow spell of the machine (another process, a busy host under a virtual machine: the 2-core fp32
peak measured here swings between ~320 and ~480 GFLOP/s) then slows every contender of a round
instead of deciding which one wins.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence

#: A zero-argument function that times one calibrated sample and returns seconds per call.
Sampler = Callable[[], float]


def samples_in_turns(
    samplers: Sequence[Sampler], rounds: int = 7, pause_s: float = 0.0
) -> list[list[float]]:
    """``rounds`` samples of each sampler, taken one of each per round.

    ``pause_s`` separates consecutive samples: contenders from different libraries (NumPy's
    OpenBLAS, PyTorch's OpenMP, TVM's pool) leave worker threads spinning that would share the
    next one's cores.
    """
    samples: list[list[float]] = [[] for _ in samplers]
    for round_ in range(rounds):
        for index, (sampler, taken) in enumerate(zip(samplers, samples, strict=True)):
            if pause_s and (round_ or index):
                time.sleep(pause_s)
            taken.append(sampler())
    return samples


def in_turns(samplers: Sequence[Sampler], rounds: int = 7, pause_s: float = 0.0) -> list[float]:
    """The median of ``rounds`` samples of each sampler, taken in turns."""
    return [statistics.median(s) for s in samples_in_turns(samplers, rounds, pause_s)]


def calls_for(run: Callable[[], object], seconds: float, clock: Callable[[], float]) -> Sampler:
    """A sampler that calls ``run`` once to warm it, then again and again until ``seconds`` of
    ``clock`` have passed, and returns ``clock``'s seconds per call: ``time.thread_time`` leaves
    out the time a single-threaded call waits for a core that other processes hold."""

    def sample() -> float:
        run()
        start, calls = clock(), 0
        while clock() - start < seconds:
            run()
            calls += 1
        return (clock() - start) / calls

    return sample
