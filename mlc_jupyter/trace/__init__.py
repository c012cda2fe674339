"""Trace replay: read a schedule trace, replay it step by step, edit its decisions, re-time it.

Importing this package does not import TVM.
"""

from __future__ import annotations

from typing import Any

__all__ = ["TraceSession", "load_trace"]


def load_trace(obj: Any, mod: Any = None, candidates: Any = ()) -> Any:
    """A :class:`TraceSession` for a Schedule, Trace, JSON, tune result or tuning record."""
    from .session import TraceSession

    return TraceSession.load(obj, mod, candidates)


def __getattr__(name: str) -> Any:
    if name == "TraceSession":
        from .session import TraceSession

        return TraceSession
    raise AttributeError(name)
