"""The schedule stepper: scrub through the steps of a schedule, or build one from the menus.

It shares the :class:`~.stepper.Stepper` base and its front end (``stepper.js``) with the pass
stepper; the side panels here are the trace and the loop nest of each step.
"""

from __future__ import annotations

from typing import Any

import traitlets as t

from ..display.schedule import schedule_bundle
from ..errors import MLCError
from ..schedule import (
    PRIMITIVES,
    ScheduleSession,
    loop_tree_text,
    set_last_export,
    statement_for,
)
from .stepper import Stepper, step_view

__all__ = ["ScheduleStepper"]


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
