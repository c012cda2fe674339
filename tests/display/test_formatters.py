"""The one formatter table: every result type renders in a real IPython shell after ``%load_ext``,
whichever magic made it or none (results made here, no TVM)."""

from __future__ import annotations

from mlc_jupyter.display.formatters import formatter_table
from mlc_jupyter.measure.compare import TimingReport
from mlc_jupyter.measure.timer import Timing
from mlc_jupyter.tvm_compat import IR_DISPLAY_TYPES


def _timing(name: str, median_s: float) -> Timing:
    return Timing(name, median_s, median_s, 0.0, median_s, 5)


def test_every_row_of_the_table_is_registered_at_load_ext(shell):
    formatters = shell.display_formatter.formatters
    html, plain = formatters["text/html"], formatters["text/plain"]
    for cls, (as_html, as_text) in formatter_table(shell).items():
        assert as_html is None or html.lookup_by_type(cls) is not None, cls.__name__
        assert as_text is None or plain.lookup_by_type(cls) is not None, cls.__name__
    # TVM's IR, by name; once an IR object was shown, IPython keeps its printer by type
    by_type = {(t.__module__, t.__name__) for t in html.type_printers}
    assert set(IR_DISPLAY_TYPES) <= set(html.deferred_printers) | by_type


def _shown(shell, obj) -> tuple[str, str]:
    """The text a shell prints and the HTML a notebook shows (a terminal shell computes text
    only, so the HTML formatter is looked up)."""
    data, _ = shell.display_formatter.format(obj)
    html = shell.display_formatter.formatters["text/html"]
    return data["text/plain"], html.lookup(obj)(obj)


def test_a_report_made_without_a_magic_shows_its_table(shell):
    report = TimingReport((_timing("naive", 2e-3), _timing("tuned", 1e-3)))
    text, html = _shown(shell, report)
    assert "naive" in text and "tuned" in text
    assert "<svg" in html  # the bar chart


def test_a_single_timing_shows_as_a_one_row_report(shell):
    text, html = _shown(shell, _timing("f", 1e-3))
    assert text.splitlines()[1].split()[:2] == ["f", "1.000"]  # one row: f, 1.000 ms
    assert html.count("<tr") == 2  # the head and its row
