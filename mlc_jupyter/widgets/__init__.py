"""anywidget front ends over the services; each widget's state lives in traits.

Importing this package imports neither TVM nor anywidget; each widget loads on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

_WIDGETS = {
    "PassStepper": "pass_stepper",
    "ScheduleStepper": "schedule_stepper",
    "TraceReplay": "trace_replay",
}


def __getattr__(name: str) -> Any:
    if name in _WIDGETS:
        return getattr(importlib.import_module(f"{__name__}.{_WIDGETS[name]}"), name)
    raise AttributeError(name)
