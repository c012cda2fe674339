"""The ES modules of the widgets: each widget's front end with the shared DOM helpers before it."""

from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).parent


def widget_esm(name: str) -> str:
    """``dom.js`` followed by ``<name>.js`` (anywidget loads one module per widget)."""
    return (_HERE / "dom.js").read_text() + "\n" + (_HERE / f"{name}.js").read_text()
