"""Inputs from signatures, references, timing in turns, GFLOP/s, per-kernel profiles (``%mlc_time``)."""

from .compare import TimingReport, report_for, time_functions
from .machine import MachineLimits
from .profile import KernelProfile, KernelTime, builds_relax_module, profile_kernels
from .race import time_module
from .timer import Sampling, Timing, estimate_flops

__all__ = [
    "KernelProfile",
    "KernelTime",
    "MachineLimits",
    "Sampling",
    "Timing",
    "TimingReport",
    "builds_relax_module",
    "estimate_flops",
    "profile_kernels",
    "report_for",
    "time_functions",
    "time_module",
]
