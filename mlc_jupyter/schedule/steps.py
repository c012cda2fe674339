"""Run schedule code statement by statement on a fresh schedule and record every step."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from .. import origins, tvm_compat
from ..dialect import translate
from ..errors import ScheduleStepError, error_reason
from .handle_names import cell_names, learn_cell_names, named_as_in_the_cell
from .irdiff import changed_lines

__all__ = [
    "export_steps",
    "fresh_schedule",
    "run_schedule_cell",
    "short_schedule_error",
    "top_level_statements",
    "trace_lines",
]

_OBJ_REF = re.compile(tvm_compat.SCHEDULE_ERROR_OBJECT_REF)
_PRIMITIVE = re.compile(r"schedule primitive '(\w+)'")


@dataclass(frozen=True)
class ScheduleStep:
    """One statement of a schedule cell that added trace instructions.

    ``line`` is the cell line (the ``%%mlc_schedule`` line is 1); ``trace`` the Python lines of the
    instructions it added; ``script`` the module text after it; ``changed`` the 1-based lines of
    ``script`` that differ from the previous step's.
    """

    index: int
    line: int
    source: str
    trace: tuple[str, ...]
    script: str
    changed: tuple[int, ...] = ()
    mod: Any = field(default=None, compare=False, repr=False)


class StepsOutcome:
    """What a run of steps (schedule or passes) says about its outcome."""

    initial_script: str
    steps: tuple[Any, ...]
    error: Any

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def final_script(self) -> str:
        return self.steps[-1].script if self.steps else self.initial_script


@dataclass(frozen=True)
class ScheduleRun(StepsOutcome):
    """A schedule cell run step by step: the initial module, the steps and the outcome.

    ``error`` is the :class:`~mlc_jupyter.errors.ScheduleStepError` of the failing statement (the
    steps before it are kept); ``sch`` is the schedule (``None`` when a step failed);
    ``namespace`` holds only the names the schedule code itself bound (``i, j = sch.get_loops(...)``).
    """

    initial_script: str
    steps: tuple[ScheduleStep, ...]
    error: Any = None
    sch: Any = field(default=None, compare=False, repr=False)
    namespace: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


def fresh_schedule(mod: Any, func_name: str | None = None) -> Any:
    """A new TensorIR schedule of ``mod`` (an IRModule or PrimFunc); never reuses state."""
    sch = tvm_compat.Schedule(mod)
    # a module of one function: let the block lookup find a block without func_name
    if func_name is None:
        names = [gv.name_hint for gv in sch.mod.get_global_vars()]
        func_name = names[0] if len(names) == 1 else None
    if func_name is not None:
        sch.work_on(func_name)
    return sch


def trace_lines(sch: Any) -> list[str]:
    """The schedule's trace as Python lines (``sch.split(...)``, ``sch.reorder(...)``...)."""
    return [str(line) for line in sch.trace.as_python()]


def short_schedule_error(err: BaseException) -> str:
    """Turn a TVM ScheduleError (with its whole-IR dump) into one line: primitive: reason."""
    text = str(err)
    primitive = _PRIMITIVE.search(text)
    reason = re.sub(r"^(\w+Error: )+", "", error_reason(err))
    # "tirx.For#0" -> the loop/block line the diagnostic annotates ("for j in range(128)")
    lines = text.splitlines()
    for ref in set(_OBJ_REF.findall(reason)):
        for k, line in enumerate(lines[:-1]):
            if line.strip() == f"# {ref}":
                target = lines[k + 1].strip().rstrip(":")
                reason = reason.replace(ref, f"`{target}`")
                break
    if primitive:
        return f"{primitive.group(1)}: {reason}"
    return reason


class Statement(NamedTuple):
    """A top-level statement of a cell: first and last line (1-based), its text and AST node."""

    start: int
    end: int
    text: str
    node: ast.stmt


def top_level_statements(source: str) -> list[Statement]:
    """Top-level statements of ``source`` (decorators included); raises ``SyntaxError``."""
    tree = ast.parse(source)
    lines = source.splitlines()
    out = []
    for node in tree.body:
        start = node.lineno
        if getattr(node, "decorator_list", None):
            start = min(d.lineno for d in node.decorator_list)
        end = node.end_lineno or node.lineno
        out.append(Statement(start, end, "\n".join(lines[start - 1 : end]), node))
    return out


def run_schedule_cell(
    source: str,
    mod: Any,
    *,
    namespace: dict[str, Any] | None = None,
    func_name: str | None = None,
    first_line: int = 2,
    max_steps: int | None = None,
) -> ScheduleRun:
    """Run schedule ``source`` on a fresh schedule of ``mod``, one top-level statement at a time.

    Parameters
    ----------
    source
        Schedule code in the course's spelling or TVM 0.27's; ``sch`` names the schedule.
    mod
        The IRModule (or PrimFunc) to schedule; it is never modified.
    namespace
        Names the code may read (copied; nothing is written back).
    func_name
        Default function for the block lookup ``sch.get_block(name)`` when the module has several.
    first_line
        Cell line of the first line of ``source`` (2 below a ``%%`` magic line).
    max_steps
        Stop after this many recorded steps (replay the first k steps).

    Returns
    -------
    ScheduleRun
        With ``error`` set (a :class:`ScheduleStepError` at its cell line) when a statement failed;
        the steps before it are kept.
    """
    translated = translate(source).source
    offset = first_line - 1
    try:
        statements = top_level_statements(translated)
    except SyntaxError as err:
        line = (err.lineno or 1) + offset
        raw = source.splitlines()[(err.lineno or 1) - 1] if source.strip() else ""
        error = ScheduleStepError(
            f"syntax error: {err.msg}", line=line, column=err.offset or 1, source_line=raw
        )
        return ScheduleRun(mod.script(), (), error)
    sch = fresh_schedule(mod, func_name)
    given: dict[str, Any] = {**tvm_compat.schedule_namespace(), **(namespace or {}), "sch": sch}
    ns = dict(given)
    initial_mod = sch.mod
    initial = initial_mod.script()
    steps: list[ScheduleStep] = []
    previous, n_trace = initial, 0
    raw_lines = source.splitlines()
    names: dict[str, str] = {}  # the trace's handle names -> the cell's
    for start, end, text, _node in statements:
        if max_steps is not None and len(steps) >= max_steps:
            break
        try:
            exec(compile(text, f"<schedule line {start + offset}>", "exec"), ns)  # noqa: S102
        except Exception as err:  # noqa: BLE001 - any failure becomes a located step error
            message = short_schedule_error(err)
            raw = raw_lines[start - 1] if start - 1 < len(raw_lines) else text
            error = ScheduleStepError(
                message, line=start + offset, source_line=raw, span=max(1, len(raw.rstrip()))
            )
            _remember(initial_mod, steps)
            return ScheduleRun(initial, tuple(steps), error, None, {})
        lines = trace_lines(sch)
        if len(lines) == n_trace:
            continue
        learn_cell_names(sch, ns, names)
        script = sch.mod.script()
        steps.append(
            ScheduleStep(
                index=len(steps) + 1,
                line=start + offset,
                source="\n".join(raw_lines[start - 1 : end]),
                trace=tuple(named_as_in_the_cell(lines[n_trace:], names)),
                script=script,
                changed=tuple(changed_lines(previous, script)),
                mod=sch.mod,
            )
        )
        previous, n_trace = script, len(lines)
    _remember(initial_mod, steps)
    return ScheduleRun(initial, tuple(steps), None, sch, _defined(ns, given))


def _remember(initial: Any, steps: list[ScheduleStep]) -> None:
    """Let a build of any step's module name the step that introduced a problem."""
    places = [(origins.StepPlace(s.index, s.line, s.source), s.mod) for s in steps]
    origins.remember_schedule(initial, places)


def _defined(ns: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """The names the schedule code bound (new, or rebound to another object), ``sch`` aside."""
    return {
        key: value
        for key, value in ns.items()
        if key != "sch"
        and not key.startswith("__")
        and (key not in given or given[key] is not value)
    }


def export_steps(sch_or_run: Any) -> str:
    """Code that, pasted into a ``%%mlc_schedule`` cell, reproduces the schedule's module (with
    the names the cell gave its handles)."""
    sch = getattr(sch_or_run, "sch", sch_or_run)
    if sch is None:
        raise ValueError("nothing to export: the schedule run failed")
    return "\n".join(named_as_in_the_cell(trace_lines(sch), cell_names(sch.trace)))
