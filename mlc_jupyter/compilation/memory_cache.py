"""Builds kept in this kernel's memory, the least recently used dropped past a byte cap.

A long session builds hundreds of variants; each build keeps its compiled code (and a model's
its weights) alive for as long as the cache holds it, so the cache counts what each entry holds
and drops the least recently used past ``$MLC_JUPYTER_MEMORY_CACHE_MB`` (default 1024). A build
the notebook still names stays alive through that name; only the cache forgets it.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from typing import Any

from .model_costs import weights

#: What one build's code costs in memory beside its weights (the compiled module, its LLVM
#: module, the IR kept for display); ``bench/bench_trust.py`` measures it.
CODE_BYTES = 320 * 1024


def memory_cache_limit_bytes() -> int:
    """The cap: ``$MLC_JUPYTER_MEMORY_CACHE_MB`` (default 1024)."""
    return int(float(os.environ.get("MLC_JUPYTER_MEMORY_CACHE_MB", "1024")) * 2**20)


def footprint(mod: Any) -> int:
    """Bytes a build of ``mod`` holds: its code, and the weights bound into a Relax ``main``."""
    try:
        main = mod["main"]
        held = weights(main, len(main.params))[1] if hasattr(main, "params") else 0
    except Exception:  # noqa: BLE001 - no main, or not a Relax module: code only
        held = 0
    return CODE_BYTES + int(held)


class MemoryCache:
    """Builds by key, least recently used first out past :func:`memory_cache_limit_bytes`."""

    def __init__(self) -> None:
        self._entries: OrderedDict[str, tuple[Any, int]] = OrderedDict()
        self.bytes = 0

    def get(self, key: str) -> Any:
        entry = self._entries.get(key)
        if entry is None:
            return None
        self._entries.move_to_end(key)
        return entry[0]

    def put(self, key: str, built: Any, size: int) -> None:
        """Keep ``built``; the oldest entries go until the cache fits (the new one stays)."""
        old = self._entries.pop(key, None)
        if old is not None:
            self.bytes -= old[1]
        self._entries[key] = (built, size)
        self.bytes += size
        limit = memory_cache_limit_bytes()
        while self.bytes > limit and len(self._entries) > 1:
            _, (_, dropped) = self._entries.popitem(last=False)
            self.bytes -= dropped

    def clear(self) -> None:
        self._entries.clear()
        self.bytes = 0

    def __len__(self) -> int:
        return len(self._entries)
