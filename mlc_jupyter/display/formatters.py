"""The one table of how results show in IPython: each type with its HTML and its text.

Registered once, at ``%load_ext mlc_jupyter`` (:func:`register_formatters`), so a result renders
the same whichever magic made it, or none did (``tune(...)`` called in a cell). A new result type
gets its row here; ``tests/test_layers.py`` fails on a formatter registered anywhere else. TVM's
IR objects are registered by name, so loading the extension imports no TVM.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..caches import CacheCleared, CacheInfo
from ..compilation.cached_build import Built
from ..measure.compare import TimingReport
from ..measure.machine import MachineLimits
from ..measure.profile import KernelProfile
from ..measure.timer import Timing
from ..results import ImportedModel
from ..tune.report import TuneResult
from ..tvm_compat import IR_DISPLAY_TYPES
from .build import built_text
from .cache import cache_info_html, cache_info_text, cleared_html, cleared_text
from .ir import ir_html
from .models import import_bundle
from .profile import profile_html, profile_text
from .roofline import limits_bundle, limits_text
from .timing import report_html, report_text, shown_above, summary_line
from .tune import result_bundle, result_text

#: How one type shows: its HTML (``None``: no HTML, or none for this object) and its text.
Renderers = tuple[Callable[[Any], str | None] | None, Callable[[Any], str] | None]


def formatter_table(shell: Any) -> dict[type, Renderers]:
    """Every result type of the package and how it shows in ``shell`` (a timing report that
    ``%mlc_time -o`` printed in this cell shows as one line, as ``%timeit -o``'s result does)."""

    def report_once_html(report: TimingReport) -> str | None:
        return None if shown_above(report, shell.execution_count) else report_html(report)

    def report_once_text(report: TimingReport) -> str:
        if shown_above(report, shell.execution_count):
            return summary_line(report)
        return report_text(report)

    return {
        TuneResult: (lambda r: result_bundle(r)["text/html"], result_text),
        TimingReport: (report_once_html, report_once_text),
        Timing: (
            lambda t: report_html(TimingReport((t,))),
            lambda t: report_text(TimingReport((t,))),
        ),
        Built: (None, built_text),
        ImportedModel: (
            lambda m: import_bundle(m)["text/html"],
            lambda m: import_bundle(m)["text/plain"],
        ),
        KernelProfile: (profile_html, profile_text),
        MachineLimits: (lambda m: limits_bundle(m)["text/html"], limits_text),
        CacheInfo: (cache_info_html, cache_info_text),
        CacheCleared: (cleared_html, cleared_text),
    }


def register_formatters(shell: Any) -> None:
    """Register the table with ``shell``'s display formatters (once, at ``%load_ext``)."""
    formatters = shell.display_formatter.formatters
    html, plain = formatters["text/html"], formatters["text/plain"]
    for cls, (as_html, as_text) in formatter_table(shell).items():
        if as_html is not None:
            html.for_type(cls, as_html)
        if as_text is not None:
            plain.for_type(cls, _printer(as_text))
    for module, name in IR_DISPLAY_TYPES:  # by name: TVM is imported on first use
        html.for_type_by_name(module, name, ir_html)


def _printer(as_text: Callable[[Any], str]) -> Callable[[Any, Any, bool], None]:
    """IPython's pretty-printer form of a text renderer."""
    return lambda obj, p, cycle: p.text(as_text(obj))
