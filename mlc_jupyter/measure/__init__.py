"""Inputs from signatures, references, ``time_evaluator`` timing, GFLOP/s (behind ``%mlc_time``)."""

from .compare import report_for, time_functions
from .timer import estimate_flops, time_callable, time_module

__all__ = ["estimate_flops", "report_for", "time_callable", "time_functions", "time_module"]
