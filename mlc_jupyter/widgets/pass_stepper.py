"""The pass stepper widget: every pass applied to a module, with IR, diff, functions, operators
and the dataflow graph of each step (Compiler Explorer's pipeline view for Relax).

Shares the schedule stepper's front end (``stepper.js``); the graph of the step on screen is
drawn in Python (Graphviz SVG) whenever the step, the function or the fused-function mode changes.
"""

from __future__ import annotations

from typing import Any

import traitlets as t

from ..display.passes import passes_bundle
from ..graph import function_graph, graph_svg, graph_text, relax_function_names
from ..passes import export_passes
from ..passes.steps import PassRun
from ..schedule import set_last_export
from .stepper import Stepper, step_view

__all__ = ["PassStepper"]


def _functions_text(step: Any, mod: Any) -> str:
    lines = [f"+ {n}" for n in step.appeared] + [f"- {n}" for n in step.vanished]
    names = sorted(str(gv.name_hint) for gv in mod.get_global_vars())
    return "\n".join([*lines, *([""] if lines else []), *names])


def _tir_names(mod: Any) -> list[str]:
    names = set(relax_function_names(mod))
    return sorted(str(gv.name_hint) for gv in mod.get_global_vars() if gv.name_hint not in names)


def _ops_text(counts: dict[str, int], previous: dict[str, int]) -> str:
    rows = []
    for name in sorted(set(counts) | set(previous)):
        now, before = counts.get(name, 0), previous.get(name, 0)
        delta = f" ({now - before:+d})" if now != before else ""
        rows.append(f"{now:>3}  {name}{delta}")
    return "\n".join(rows) or "—"


class PassStepper(Stepper):
    """Steps of a pass run (a ``%%mlc_passes`` cell or a ``--pipeline``).

    Parameters
    ----------
    run
        The :class:`~mlc_jupyter.passes.steps.PassRun` to show.
    namespace
        Where :meth:`bind_step` puts modules (the notebook's namespace in the magic).
    base
        Name for bound steps (``MLPModel`` -> ``MLPModel_step3``).
    """

    graph_svg = t.Unicode("").tag(sync=True)
    graph_text = t.Unicode("").tag(sync=True)
    graph_functions = t.List(t.Unicode()).tag(sync=True)
    graph_function = t.Unicode("").tag(sync=True)
    graph_fused = t.Unicode("auto").tag(sync=True)
    code = t.Unicode("").tag(sync=True)

    def __init__(
        self,
        run: PassRun,
        *,
        title: str = "",
        target: Any = None,
        namespace: dict[str, Any] | None = None,
        base: str = "mod",
        **kwargs: Any,
    ) -> None:
        super().__init__(title=title, target=target, **kwargs)
        self.run, self.namespace, self.base = run, namespace, base
        self._drawing = False
        self.views = [*self.views, ["graph", "graph"]]
        self.panels = [{"title": "functions", "key": "functions"},
                       {"title": "operators", "key": "ops"}]  # fmt: skip
        self.show_list = True
        self._sync()
        self.observe(self._draw_graph, names=["index", "graph_function", "graph_fused"])
        self.index = len(self.steps) - 1
        self._draw_graph()

    @classmethod
    def of(cls, run: PassRun, **kwargs: Any) -> PassStepper:
        """A stepper over ``run`` (from ``run_pass_cell`` or ``run_pipeline``)."""
        return cls(run, title=kwargs.pop("title", "passes"), **kwargs)

    def module_at(self, index: int) -> Any:
        return self.run.module_at(index)

    def export(self) -> str:
        """The steps as code for a ``%%mlc_passes`` cell (also kept for ``last_export()``)."""
        self.code = export_passes(self.run)
        set_last_export(self.code)
        return self.code

    def bind_step(self, index: int | None = None, name: str | None = None) -> str:
        """Bind the module after step ``index`` (default: the current one) in the namespace."""
        index = self.index if index is None else index
        name = name or f"{self.base}_step{index}"
        if self.namespace is None:
            raise ValueError("this stepper has no namespace to bind in")
        self.namespace[name] = self.module_at(index)
        self.status = f"bound {name} (the module after step {index})"
        return name

    def schedule_cell(self, func: str, index: int | None = None) -> str:
        """Bind step ``index``'s module and return the ``%%mlc_schedule`` line that opens
        ``func`` in the schedule stepper (the scheduled module goes back with ``sch.mod``)."""
        name = self.bind_step(index)
        self.code = f"%%mlc_schedule {name} --func {func} --as {name}_sch\n"
        set_last_export(self.code)
        return self.code

    # -- syncing ------------------------------------------------------------------------------------
    def _sync(self) -> None:
        run = self.run
        initial, counts = run.initial_script, run.initial_op_counts
        views = [step_view(0, 0, "(initial module)", name="initial module", unchanged=False,
                           functions=_functions_text(_NoStep, run.initial_mod),
                           ops=_ops_text(counts, counts), tir=_tir_names(run.initial_mod))]  # fmt: skip
        previous_counts = counts
        for step in run.steps:
            views.append(step_view(
                step.index, step.line, step.source, name=step.name, unchanged=not step.changed,
                functions=_functions_text(step, step.mod),
                ops=_ops_text(step.op_counts, previous_counts), tir=_tir_names(step.mod),
            ))  # fmt: skip
            previous_counts = step.op_counts
        self.set_steps(views, [initial, *(step.script for step in run.steps)])
        if run.error is not None:
            self.error, self.error_line = str(run.error), run.error.line
        self.code = ""

    def _draw_graph(self, _change: Any = None) -> None:
        if self._drawing:  # setting graph_function below re-enters through the observer
            return
        mod = self.module_at(max(0, min(self.index, len(self.steps) - 1)))
        names = relax_function_names(mod)
        names = sorted(names, key=lambda n: (n != "main", n))  # main first
        self._drawing = True
        try:
            self.graph_functions = names
            if not names:
                self.graph_svg, self.graph_text = "", "(no Relax function at this step)"
                return
            func = self.graph_function if self.graph_function in names else names[0]
            graph = function_graph(mod, func, self.graph_fused)
            self.graph_function = func
            self.graph_text = graph_text(graph)
            self.graph_svg = graph_svg(graph) or ""
        finally:
            self._drawing = False

    def handle(self, kind: str, content: dict[str, Any]) -> None:
        if kind == "export":
            self.export()
        elif kind == "schedule":
            self.schedule_cell(str(content.get("func", "")), content.get("index"))
        else:
            super().handle(kind, content)

    def static_bundle(self) -> dict[str, str]:
        return passes_bundle(self.run)


class _NoStep:
    appeared: tuple[str, ...] = ()
    vanished: tuple[str, ...] = ()
