"""The runner's clock times a candidate warm, or, for a model's kernel, cold as the model runs it."""

from __future__ import annotations

import numpy as np
from build_support import matmul
from timing_support import spy_on_kernel_timer

from mlc_jupyter.compilation import device_for
from mlc_jupyter.compilation.targets import resolve_target
from mlc_jupyter.tune.search import runner
from mlc_jupyter.tune.search.candidate_builder import build_candidate
from mlc_jupyter.tvm_compat import tensor, tvm


def _clock(monkeypatch, cold: bool) -> tuple[runner.ModuleClock, list[tuple[int, bool]]]:
    made = spy_on_kernel_timer(monkeypatch, runner)
    target = resolve_target(None)
    device = device_for(target)
    rng = np.random.default_rng(0)
    args = [tensor(rng.random((64, 64), dtype="float32"), device=device) for _ in range(3)]
    kernel = tvm().IRModule({"main": matmul(64).with_attr("global_symbol", "main")})
    built = build_candidate(kernel, target)
    return runner.ModuleClock(built, args, device, cold=cold), made


def test_a_cold_reading_is_the_mean_of_single_calls_each_after_a_flush(monkeypatch):
    clock, made = _clock(monkeypatch, cold=True)
    readings = clock.repeats(4, 3)
    assert len(readings) == 3 and all(r > 0 for r in readings)
    assert made == [(12, True)]  # 4 calls a reading, 3 readings, every call flushed first
    assert clock.probe() > 0 and made[-1] == (1, True)


def test_a_warm_reading_calls_the_kernel_again_and_again_without_a_flush(monkeypatch):
    clock, made = _clock(monkeypatch, cold=False)
    assert len(clock.repeats(4, 3)) == 3 and made == []
    assert clock.probe() > 0 and made == [(1, False)]
