"""``%%mlc_schedule MOD``: run schedule code step by step; ``%mlc_schedule MOD``: build one from menus."""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display

from ..display.schedule import schedule_bundle
from ..schedule import ScheduleSession
from ..schedule.session import driven_schedule_steps
from ..widgets.schedule_stepper import ScheduleStepper
from .course_state import course_spelling_options
from .lookup import lookup


@magics_class
class ScheduleMagics(Magics):
    """Schedule cells that record every step, and an interactive schedule builder."""

    @magic_arguments()
    @argument("mod", help="the IRModule or PrimFunc to schedule (a fresh schedule each run)")
    @argument("--as", dest="name", default=None, help="also bind the schedule here (MOD_sch)")
    @argument("--func", default=None, help="function of MOD that sch.get_block(name) looks in")
    @argument("--time", action="store_true", help="build and time the module after each step")
    @argument("--target", default=None, help="target for timing (default: the host CPU)")
    @argument("--static", action="store_true", help="show the static HTML view, no widget")
    @line_cell_magic
    def mlc_schedule(self, line: str, cell: str | None = None) -> Any:
        """Run schedule code on a fresh ``sch`` of MOD statement by statement and show the steps.

        As a cell magic the cell holds the code (course spelling or TVM 0.27's); every statement
        that adds trace instructions becomes a step of the stepper widget. On success ``sch`` and
        ``--as NAME`` (default ``MOD_sch``) hold the schedule; a failing statement is reported at
        its cell line and nothing is bound. As a line magic it opens the interactive builder
        (menus, undo/redo, export) and returns the widget.
        """
        args = parse_argstring(self.mlc_schedule, line)
        mod = lookup(self.shell, args.mod, "mlc_schedule", "the module")
        base = args.mod.split(".")[0].split("[")[0]
        if cell is None:
            session = ScheduleSession(mod, "", namespace=self.shell.user_ns, func_name=args.func)
            title = f"interactive schedule of {args.mod}"
            return ScheduleStepper(
                session,
                interactive=True,
                title=title,
                target=args.target,
                **course_spelling_options(self.shell),
            )
        if driven_schedule_steps(mod) is not None:
            raise UsageError(
                f"%%mlc_schedule schedules a module; {args.mod} is a schedule: "
                f"%mlc_schedule {args.mod} steps through what it did, %%mlc_schedule "
                f"{args.mod}.start_mod schedules the module it started from"
            )
        session = ScheduleSession(
            mod, cell, namespace=self.shell.user_ns, func_name=args.func, first_line=2
        )
        run = session.run
        if args.static:
            display(schedule_bundle(run), raw=True)
        else:
            widget = ScheduleStepper(
                session,
                title=f"schedule of {args.mod}",
                target=args.target,
                **course_spelling_options(self.shell),
            )
            if args.time and run.error is None:
                for step in [0, *(s.index for s in run.steps if s.changed)]:
                    widget.time_step(step)
            display(widget)
        if run.error is not None:
            raise run.error
        self._bind(run, args.name or f"{base}_sch")
        return None

    def _bind(self, run: Any, name: str) -> None:
        """Bind what the schedule code defined, ``sch`` and ``name`` (the schedule)."""
        user_ns = self.shell.user_ns
        user_ns.update(run.namespace)
        user_ns["sch"] = run.sch
        user_ns[name] = run.sch


def register(ipython: Any) -> None:
    ipython.register_magics(ScheduleMagics)
