"""Graph passes applied step by step: a cell of passes or a named pipeline, every step recorded.

Plain Python + TVM (no IPython, no widgets): ``run_pass_cell(code, mod)`` runs the statements of a
``%%mlc_passes`` cell, ``run_pipeline(mod, "default")`` observes a pipeline with a PassInstrument,
``replace_function(mod, name, sch)`` puts a scheduled function back into a module.
"""

from __future__ import annotations

from .apply import apply_value, observe_pass, replace_function, rewrite_functions
from .steps import PassRun, PassStep, export_passes, pass_reason, run_pass_cell, run_pipeline

__all__ = [
    "PassRun",
    "PassStep",
    "apply_value",
    "export_passes",
    "observe_pass",
    "pass_reason",
    "replace_function",
    "rewrite_functions",
    "run_pass_cell",
    "run_pipeline",
]
