"""Stepper widgets: scrub through the steps of a schedule (or build one from menus).

:class:`Stepper` is what every stepper shares (the pass stepper too): steps with their
highlighted IR and diffs, side panels, timing a step, the static view a saved notebook keeps.
State lives in traits (computed here); the front end (``stepper.js``) only draws them and sends
``apply`` / ``undo`` / ``redo`` / ``time`` / ``export`` messages, which become method calls.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anywidget
import traitlets as t

from ..display.highlight import highlight_html
from ..display.schedule import schedule_bundle
from ..errors import MLCError
from ..measure import time_module
from ..results import Timing
from ..schedule import (
    PRIMITIVES,
    ScheduleSession,
    changed_lines,
    loop_tree_text,
    set_last_export,
    side_by_side,
    statement_for,
    unified_diff,
)
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

    def __init__(self, *, title: str = "", target: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.target, self.title = target, title
        self.views = [["ir", "IR"], ["unified", "unified diff"], ["side", "side by side"]]
        self.scripts: list[str] = []  # the IR text after each step (0: before the first)
        self.observe(self._show_current, names=["index"])
        self.on_msg(self._on_message)

    def module_at(self, index: int) -> Any:
        """The module after step ``index`` (0: before the first step)."""
        raise NotImplementedError

    def set_steps(self, views: list[dict], scripts: list[str]) -> None:
        """Show ``views`` (one :func:`step_view` per step) whose IR texts are ``scripts``."""
        self.scripts = scripts
        self.steps = views
        self._show_current()

    def _show_current(self, _change: Any = None) -> None:
        if not self.scripts:
            return
        index = max(0, min(self.index, len(self.scripts) - 1))
        self.current = ir_view(index, self.scripts[max(0, index - 1)], self.scripts[index])

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
            "gflops": timing.gflops,
            "correct": timing.correct,
            "error": timing.error or "",
        }
        self.timings = sorted([*(r for r in self.timings if r["index"] != index), row],
                              key=lambda r: r["index"])  # fmt: skip
        self.status = f"step {index}: " + (
            f"{row['ms']:.4f} ms" if row["ms"] is not None else f"failed: {row['error']}"
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


class ScheduleStepper(Stepper):
    """Steps of a schedule with the IR at each step, what changed, the trace and the loop nest.

    Parameters
    ----------
    session
        The :class:`~mlc_jupyter.schedule.ScheduleSession` to show (its ``run`` holds the steps).
    interactive
        Show the primitive menus, undo/redo and export (``%mlc_schedule MOD``).
    target
        Target for "time this step" (``None``: the host CPU).
    """

    interactive = t.Bool(False).tag(sync=True)
    blocks = t.Dict().tag(sync=True)
    primitives = t.Dict().tag(sync=True)
    code = t.Unicode("").tag(sync=True)
    can_redo = t.Bool(False).tag(sync=True)

    def __init__(
        self,
        session: ScheduleSession,
        *,
        interactive: bool = False,
        title: str = "",
        target: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(title=title, target=target, **kwargs)
        self.session = session
        self.interactive = interactive
        self.panels = [{"title": "trace", "key": "trace"}, {"title": "loop nest", "key": "tree"}]
        self.primitives = {k: list(v) for k, v in PRIMITIVES.items()}
        self._sync()
        self.index = len(self.steps) - 1

    @classmethod
    def of(
        cls,
        mod: Any,
        code: str = "",
        *,
        func: str | None = None,
        interactive: bool = True,
        target: Any = None,
        namespace: dict[str, Any] | None = None,
    ) -> ScheduleStepper:
        """A stepper over a fresh schedule of ``mod`` (``%mlc_schedule MOD`` from Python).

        ``code`` is schedule code to start from (the body of a ``%%mlc_schedule`` cell).
        """
        session = ScheduleSession(mod, code, namespace=namespace, func_name=func)
        title = "interactive schedule" if interactive else "schedule"
        return cls(session, interactive=interactive, title=title, target=target)

    # -- Python API (what the buttons do) -----------------------------------------------------------
    @property
    def run(self) -> Any:
        return self.session.run

    def apply(self, primitive: str, block: str, args: dict[str, Any] | None = None) -> bool:
        """Apply a primitive chosen from the menus; on failure show the reason, keep the state."""
        return self.apply_code(statement_for(primitive, block, args or {}))

    def apply_code(self, statement: str) -> bool:
        """Append one statement of schedule code; on failure show the reason, keep the state."""
        try:
            self.session.apply(statement)
        except MLCError as err:
            self.error, self.error_line = str(err), getattr(err, "line", 0)
            return False
        self.error, self.status = "", f"applied: {statement}"
        self._sync()
        self.index = len(self.steps) - 1
        return True

    def undo(self) -> None:
        if self.session.undo():
            self._sync()
            self.index = len(self.steps) - 1

    def redo(self) -> None:
        if self.session.redo():
            self._sync()
            self.index = len(self.steps) - 1

    def export(self) -> str:
        """The steps as code for a ``%%mlc_schedule`` cell (also kept for ``last_export()``)."""
        code = self.session.export()
        set_last_export(code)
        self.code = code
        return code

    def module_at(self, index: int) -> Any:
        return self.run.steps[index - 1].mod if index else self.session.mod

    # -- syncing ------------------------------------------------------------------------------------
    def _sync(self) -> None:
        run = self.session.run
        initial = run.initial_script
        views = [step_view(0, 0, "(initial module)", trace="", tree=loop_tree_text(initial))]
        for step in run.steps:
            views.append(step_view(step.index, step.line, step.source,
                                   trace="\n".join(step.trace), tree=loop_tree_text(step.script)))  # fmt: skip
        self.set_steps(views, [initial, *(step.script for step in run.steps)])
        if run.error is not None:
            self.error, self.error_line = str(run.error), run.error.line
        self.can_redo = bool(self.session.redo_stack)
        self.code = self.session.export()
        set_last_export(self.code)
        if self.interactive:
            self.blocks = self.session.blocks()
        self.timings = []

    def handle(self, kind: str, content: dict[str, Any]) -> None:
        if kind == "apply":
            self.apply(content["primitive"], content.get("block", ""), content.get("args", {}))
        elif kind == "undo":
            self.undo()
        elif kind == "redo":
            self.redo()
        elif kind == "export":
            self.export()
        else:
            super().handle(kind, content)

    def static_bundle(self) -> dict[str, str]:
        return schedule_bundle(self.run)
