"""Inputs from signatures, references, timing in turns, GFLOP/s, per-kernel profiles (``%mlc_time``)."""

from .compare import report_for, time_functions
from .profile import is_relax_model, profile_kernels
from .race import time_module
from .timer import Sampling, estimate_flops

__all__ = [
    "Sampling",
    "estimate_flops",
    "is_relax_model",
    "profile_kernels",
    "report_for",
    "time_functions",
    "time_module",
]
