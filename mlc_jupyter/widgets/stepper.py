"""The base of the stepper widgets (schedule and pass steppers): scrub through steps of IR.

:class:`Stepper` is what every stepper shares: steps with their highlighted IR and diffs, side
panels, timing a step, the static view a saved notebook keeps.
State lives in traits (computed here); the front end (``stepper.js``) only draws them and sends
``apply`` / ``undo`` / ``redo`` / ``time`` / ``export`` messages, which become method calls.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anywidget
import traitlets as t

from ..dialect import course_spelling
from ..display.highlight import highlight_html
from ..display.timing import format_time
from ..errors import MLCError
from ..measure import time_module
from ..measure.timer import Timing
from ..schedule import changed_lines, side_by_side, unified_diff
from .esm import widget_esm
from .messages import handle_showing_errors

_HERE = Path(__file__).parent


def step_view(index: int, line: int, source: str, **extra: Any) -> dict:
    """The light part of a step, kept for every step: where it came from and its side panels.

    ``extra`` holds the stepper's own fields (the side panels' texts, a step's name...). The
    highlighted IR and the diffs are computed for the step on screen only (:func:`ir_view`).
    """
    return {"index": index, "line": line, "source": source, **extra}


def ir_view(index: int, before: str, after: str) -> dict:
    """What the front end draws for the step on screen: highlighted IR (changed lines marked),
    a unified diff and side-by-side rows against the step before."""
    changed = changed_lines(before, after) if index else []
    return {
        "index": index,
        "html": highlight_html(after, marked_lines=set(changed), line_numbers=True),
        "changed": changed,
        "unified": unified_diff(before, after) if index else "",
        "side": [list(row) for row in side_by_side(before, after)],
    }


class Stepper(anywidget.AnyWidget):
    """Steps of IR with what each changed; subclasses fill ``steps`` and say how to time one.

    ``panels`` names the step fields shown beside the IR (``{"title", "key"}``), ``views`` the
    choices of the view menu, ``show_list`` adds a list of every step by name.
    """

    _esm = widget_esm("stepper")
    _css = _HERE / "stepper.css"

    title = t.Unicode("").tag(sync=True)
    steps = t.List(t.Dict()).tag(sync=True)
    index = t.Int(0).tag(sync=True)
    current = t.Dict().tag(sync=True)  # ir_view of the step on screen
    view = t.Unicode("ir").tag(sync=True)
    views = t.List(t.List()).tag(sync=True)
    panels = t.List(t.Dict()).tag(sync=True)
    show_list = t.Bool(False).tag(sync=True)
    can_time = t.Bool(True).tag(sync=True)
    error = t.Unicode("").tag(sync=True)
    error_line = t.Int(0).tag(sync=True)
    status = t.Unicode("").tag(sync=True)
    timings = t.List(t.Dict()).tag(sync=True)
    # "tvm": IR and traces as TVM 0.27 prints them; "course": in the book's spelling (T.block for
    # T.sblock), offered when the notebook runs in course mode
    spelling = t.Unicode("tvm").tag(sync=True)
    offer_course_spelling = t.Bool(False).tag(sync=True)

    def __init__(self, *, title: str = "", target: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.target, self.title = target, title
        self.views = [["ir", "IR"], ["unified", "unified diff"], ["side", "side by side"]]
        self.scripts: list[str] = []  # the IR text after each step (0: before the first)
        self._views: list[dict] = []  # the steps as made, in TVM 0.27's spelling
        self.observe(self._show_current, names=["index"])
        self.observe(self._respell, names=["spelling"])
        self.on_msg(self._on_message)

    def module_at(self, index: int) -> Any:
        """The module after step ``index`` (0: before the first step)."""
        raise NotImplementedError

    def set_steps(self, views: list[dict], scripts: list[str]) -> None:
        """Show ``views`` (one :func:`step_view` per step) whose IR texts are ``scripts``."""
        self.scripts = scripts
        self._views = views
        self._respell()

    def _spelled(self, text: str) -> str:
        return course_spelling(text) if self.spelling == "course" else text

    @t.validate("error")
    def _error_spelled(self, proposal: Any) -> str:
        """An error quotes the IR in the spelling the view is in (``T.block("Y")`` in course
        spelling, not the block spelling TVM 0.27 wrote)."""
        return self._spelled(str(proposal["value"]))

    def _respell(self, _change: Any = None) -> None:
        """The steps' traces and the IR on screen in the chosen spelling."""
        self.steps = [
            {**v, "trace": self._spelled(v["trace"])} if isinstance(v.get("trace"), str) else v
            for v in self._views
        ]
        self._show_current()

    def _show_current(self, _change: Any = None) -> None:
        if not self.scripts:
            return
        index = max(0, min(self.index, len(self.scripts) - 1))
        before, after = self.scripts[max(0, index - 1)], self.scripts[index]
        self.current = ir_view(index, self._spelled(before), self._spelled(after))

    def static_bundle(self) -> dict[str, str]:
        """HTML + text for a saved notebook or a terminal (where the widget cannot run)."""
        raise NotImplementedError

    def time_step(self, index: int | None = None) -> Any:
        """Build and time the module at step ``index`` (default: the current one).

        A module that cannot be built or run (an index out of bounds, say) gives a row with its
        error instead of a time.
        """
        index = self.index if index is None else index
        self.status = f"timing step {index}…"
        try:
            timing = time_module(self.module_at(index), self.target)
        except MLCError as err:
            timing = Timing(f"step {index}", None, None, None, None, 0, error=str(err))
        row = {
            "index": index,
            "ms": timing.median_s * 1e3 if timing.median_s else None,
            "latency": format_time(timing.median_s) if timing.median_s else "",
            "gflops": timing.gflops,
            "correct": timing.correct,
            "error": timing.error or "",
        }
        self.timings = sorted([*(r for r in self.timings if r["index"] != index), row],
                              key=lambda r: r["index"])  # fmt: skip
        self.status = f"step {index}: " + (
            row["latency"] if row["ms"] is not None else f"failed: {row['error']}"
        )
        return timing

    def handle(self, kind: str, content: dict[str, Any]) -> None:
        """A message from the front end (subclasses add their own kinds)."""
        if kind == "time":
            self.time_step(content.get("index"))

    def _on_message(self, _widget: Any, content: dict[str, Any], _buffers: Any) -> None:
        handle_showing_errors(self, lambda: self.handle(str(content.get("type")), content))

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        bundle = super()._repr_mimebundle_(**kwargs)
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        if isinstance(data, dict):
            data.update(self.static_bundle())  # what a saved notebook or a terminal shows
        return bundle
