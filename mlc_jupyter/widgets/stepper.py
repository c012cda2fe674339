"""The schedule stepper widget: scrub through the steps of a schedule, or build one from menus.

State lives in traits (every step's highlighted IR, diff and loop tree are computed here); the
front end (``stepper.js``) only draws them and sends ``apply`` / ``undo`` / ``redo`` / ``time`` /
``export`` messages, which become calls on a :class:`~mlc_jupyter.schedule.ScheduleSession`.
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

_HERE = Path(__file__).parent


def _step_view(index: int, line: int, source: str, trace: str, before: str, after: str) -> dict:
    changed = changed_lines(before, after) if index else []
    return {
        "index": index,
        "line": line,
        "source": source,
        "trace": trace,
        "html": highlight_html(after, marked_lines=set(changed), line_numbers=True),
        "changed": changed,
        "unified": unified_diff(before, after),
        "side": [list(row) for row in side_by_side(before, after)],
        "tree": loop_tree_text(after),
    }


class ScheduleStepper(anywidget.AnyWidget):
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

    _esm = _HERE / "stepper.js"
    _css = _HERE / "stepper.css"

    title = t.Unicode("").tag(sync=True)
    steps = t.List(t.Dict()).tag(sync=True)
    index = t.Int(0).tag(sync=True)
    view = t.Unicode("ir").tag(sync=True)  # "ir" | "unified" | "side"
    error = t.Unicode("").tag(sync=True)
    error_line = t.Int(0).tag(sync=True)
    status = t.Unicode("").tag(sync=True)
    interactive = t.Bool(False).tag(sync=True)
    blocks = t.Dict().tag(sync=True)
    primitives = t.Dict().tag(sync=True)
    code = t.Unicode("").tag(sync=True)
    can_redo = t.Bool(False).tag(sync=True)
    timings = t.List(t.Dict()).tag(sync=True)

    def __init__(
        self,
        session: ScheduleSession,
        *,
        interactive: bool = False,
        title: str = "",
        target: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.session, self.target = session, target
        self.interactive = interactive
        self.title = title
        self.primitives = {k: list(v) for k, v in PRIMITIVES.items()}
        self._sync()
        self.index = len(self.steps) - 1
        self.on_msg(self._on_message)

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

    def time_step(self, index: int | None = None) -> Any:
        """Build and time the module at step ``index`` (default: the current one)."""
        index = self.index if index is None else index
        run = self.run
        mod = run.steps[index - 1].mod if index else self.session.mod
        self.status = f"timing step {index}…"
        timing = time_module(mod, self.target)
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

    # -- syncing ------------------------------------------------------------------------------------
    def _sync(self) -> None:
        run = self.session.run
        views = [_step_view(0, 0, "(initial module)", "", run.initial_script, run.initial_script)]
        previous = run.initial_script
        for step in run.steps:
            views.append(
                _step_view(step.index, step.line, step.source, "\n".join(step.trace), previous,
                           step.script)
            )  # fmt: skip
            previous = step.script
        self.steps = views
        if run.error is not None:
            self.error, self.error_line = str(run.error), run.error.line
        self.can_redo = bool(self.session.redo_stack)
        self.code = self.session.export()
        set_last_export(self.code)
        if self.interactive:
            self.blocks = self.session.blocks()
        self.timings = []

    def _on_message(self, _widget: Any, content: dict[str, Any], _buffers: Any) -> None:
        kind = content.get("type")
        if kind == "apply":
            self.apply(content["primitive"], content.get("block", ""), content.get("args", {}))
        elif kind == "undo":
            self.undo()
        elif kind == "redo":
            self.redo()
        elif kind == "export":
            self.export()
        elif kind == "time":
            self.time_step(content.get("index"))

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        bundle = super()._repr_mimebundle_(**kwargs)
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        if isinstance(data, dict):
            data.update(schedule_bundle(self.run))  # what a saved notebook or a terminal shows
        return bundle
