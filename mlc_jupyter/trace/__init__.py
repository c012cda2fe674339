"""Trace replay: read a schedule trace, replay it step by step, edit its decisions, re-time it.

Importing this package does not import TVM.
"""

from __future__ import annotations

from typing import Any

from .session import ReplayResult, TraceSession
from .timing import TraceTiming

__all__ = ["ReplayResult", "TraceSession", "TraceTiming", "load_trace"]


def load_trace(obj: Any, mod: Any = None, candidates: Any = ()) -> TraceSession:
    """A :class:`TraceSession` for a Schedule, Trace, JSON, tune result or tuning record."""
    return TraceSession.load(obj, mod, candidates)
