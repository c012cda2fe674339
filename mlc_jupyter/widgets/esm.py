"""The widgets' front ends: ES modules in ``.js`` files that anywidget loads by path.

anywidget reads ``_esm`` from the file (and, with ``ANYWIDGET_HMR=1``, reloads a view when the
file changes), but loads it as one module from its text: a widget's file cannot ``import`` a
sibling file. So each widget file carries a copy of the shared DOM helpers of ``dom.js`` between
two marker lines; ``python -m mlc_jupyter.widgets.esm`` refreshes the copies, and
``tests/widgets/test_esm.py`` fails while one is stale.
"""

from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).parent
#: The front ends that carry the shared helpers.
WIDGET_FILES = ("stepper.js", "trace_replay.js")
BEGIN = "// <dom.js> a copy: edit dom.js, then run `python -m mlc_jupyter.widgets.esm`"
END = "// </dom.js>"


def widget_esm(name: str) -> Path:
    """The file of widget ``name``'s front end (``stepper`` -> ``stepper.js``)."""
    return _HERE / f"{name}.js"


def with_helpers(text: str) -> str:
    """``text`` (a widget's module) with its copy of ``dom.js`` made the current one; a module
    without a copy gets one below its opening comment."""
    helpers = (_HERE / "dom.js").read_text().rstrip("\n")
    block = f"{BEGIN}\n{helpers}\n{END}\n"
    if BEGIN not in text:
        lines = text.splitlines(keepends=True)
        top = next((i for i, line in enumerate(lines) if not line.startswith("//")), len(lines))
        return "".join(lines[:top]) + "\n" + block + "".join(lines[top:])
    head, rest = text.split(BEGIN, 1)
    return head + block + rest.split(END + "\n", 1)[1]


def stale_files(write: bool = False) -> list[str]:
    """The widget files whose copy of ``dom.js`` is out of date (refreshed when ``write``)."""
    stale = []
    for name in WIDGET_FILES:
        path = _HERE / name
        text = path.read_text()
        fresh = with_helpers(text)
        if fresh != text:
            stale.append(name)
            if write:
                path.write_text(fresh)
    return stale


if __name__ == "__main__":
    refreshed = stale_files(write=True)
    print(f"refreshed: {', '.join(refreshed)}" if refreshed else "every widget file is up to date")
