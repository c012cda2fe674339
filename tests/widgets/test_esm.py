"""The widgets' front ends are .js files anywidget loads by path, each with the shared helpers."""

from __future__ import annotations

from pathlib import Path

from mlc_jupyter.widgets import PassStepper, ScheduleStepper, TraceReplay
from mlc_jupyter.widgets.esm import BEGIN, WIDGET_FILES, stale_files, with_helpers


def test_every_widget_loads_its_front_end_from_a_file():
    for widget in (ScheduleStepper, PassStepper, TraceReplay):
        path = Path(widget._esm._path)  # anywidget's FileContents: read, and watched, by path
        assert path.suffix == ".js" and path.name in WIDGET_FILES
        assert "function h(" in str(widget._esm) and "export default" in str(widget._esm)


def test_each_widget_file_carries_the_current_dom_helpers():
    assert stale_files() == [], "run: python -m mlc_jupyter.widgets.esm"


def test_a_file_without_the_helpers_gets_them_below_its_opening_comment():
    text = "// a widget\n\nexport default { render };\n"
    fresh = with_helpers(text)
    assert fresh.startswith("// a widget\n\n" + BEGIN) and fresh.endswith(text.split("\n", 1)[1])
    assert with_helpers(fresh) == fresh  # refreshing twice changes nothing
