"""Spies on TVM's real timers: what a clock asked of them, the timing itself left to TVM."""

from __future__ import annotations

from typing import Any


def spy_on_kernel_timer(monkeypatch: Any, module: Any) -> list[tuple[int, bool]]:
    """Each timer ``module`` makes through ``kernel_timer``: its calls and whether it flushes."""
    made = []
    real = module.kernel_timer

    def spy(library, symbol, device, repeat, cold):
        made.append((repeat, cold))
        return real(library, symbol, device, repeat, cold)

    monkeypatch.setattr(module, "kernel_timer", spy)
    return made
