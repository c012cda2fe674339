"""Apply passes to a module one statement (or one pipeline pass) at a time and record each step.

Plain Python + TVM (no IPython): ``run_pass_cell(code, mod)`` runs a ``%%mlc_passes`` cell,
``run_pipeline(mod, "default")`` observes a named pipeline pass by pass. The user's module is
never modified: every statement sees ``mod``, a copy of the module so far.
"""

from __future__ import annotations

import ast
import linecache
import re
import traceback
from dataclasses import dataclass, field
from typing import Any

from .. import tvm_compat
from ..compilation.targets import resolve_target
from ..dialect import translate
from ..errors import PassStepError, error_reason
from ..graph import module_op_counts
from ..schedule.steps import Statement, StepsOutcome, top_level_statements
from .apply import Applied, apply_value, observe_pass

__all__ = ["export_passes", "pass_reason", "run_pass_cell", "run_pipeline"]

_OP_REPR = re.compile(r'ir\.Op\(.*?name="([^"]+)".*?support_level=\d+\)', re.S)
_FILE = "<mlc-passes-{}>"
_counter = [0]


@dataclass(frozen=True)
class PassStep:
    """One pass (or rewrite) applied to a module in the pass stepper.

    ``name`` is the pass's name (``FuseTIR``, ``MatmulAddFuse``, a mutator's class); ``line`` the
    cell line of the statement that applied it (0 for a ``--pipeline`` run); ``script`` the module
    text after it; ``changed`` says whether it changed the text; ``appeared`` / ``vanished`` the
    functions it added or removed; ``op_counts`` operator -> calls over the module's Relax code.
    """

    index: int
    name: str
    line: int
    source: str
    script: str
    changed: bool
    appeared: tuple[str, ...] = ()
    vanished: tuple[str, ...] = ()
    op_counts: dict[str, int] = field(default_factory=dict)
    mod: Any = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class PassRun(StepsOutcome):
    """Passes applied one by one: the initial module, the steps and the outcome.

    ``error`` is the :class:`~mlc_jupyter.errors.PassStepError` of the failing statement (the
    steps before it are kept, ``mod`` is ``None``); ``mod`` is the final module on success.
    """

    initial_script: str
    initial_mod: Any = field(compare=False, repr=False)
    steps: tuple[PassStep, ...]
    error: Any = None
    mod: Any = field(default=None, compare=False, repr=False)
    namespace: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    initial_op_counts: dict[str, int] = field(default_factory=dict)
    code: str = ""

    def module_at(self, index: int) -> Any:
        """The module after step ``index`` (0: the initial module)."""
        return self.steps[index - 1].mod if index else self.initial_mod


def pass_reason(err: BaseException) -> str:
    """TVM's reason for a failed pass in one line (operator dumps shortened to their names)."""
    reason = error_reason(_OP_REPR.sub(lambda m: m[1], str(err)), limit=None)
    reason = re.sub(r"^[\w.]*(Error|Exception): ", "", reason)
    return f"{type(err).__name__}: {reason}" if str(err).strip() else type(err).__name__


def _step(index: int, name: str, stmt: Statement | None, raw: list[str], offset: int,
          before: Any, before_script: str, after: Any) -> PassStep:  # fmt: skip
    script = after.script()
    old = {gv.name_hint for gv in before.get_global_vars()}
    new = {gv.name_hint for gv in after.get_global_vars()}
    source = "\n".join(raw[stmt.start - 1 : stmt.end]) if stmt else name
    return PassStep(
        index=index,
        name=name,
        line=stmt.start + offset if stmt else 0,
        source=source,
        script=script,
        changed=script != before_script,
        appeared=tuple(sorted(new - old)),
        vanished=tuple(sorted(old - new)),
        op_counts=module_op_counts(after),
        mod=after,
    )


def _located(err: BaseException, stmt: Statement, raw: list[str], offset: int,
             filename: str) -> PassStepError:  # fmt: skip
    """The error at the statement's line; a failure inside code the cell defined says where."""
    line = stmt.start + offset
    message = pass_reason(err)
    frames = [f for f in traceback.extract_tb(err.__traceback__) if f.filename == filename]
    inner = frames[-1] if frames else None
    if inner is not None and inner.lineno and not stmt.start <= inner.lineno <= stmt.end:
        message += f" (in {inner.name}, line {inner.lineno + offset})"
    text = raw[stmt.start - 1] if stmt.start - 1 < len(raw) else stmt.text
    return PassStepError(message, line=line, source_line=text, span=max(1, len(text.rstrip())))


def _changed_in_place(before: Any, after: Any) -> bool:
    """True when ``mod.update_func(...)`` or similar changed the copy a statement was given."""
    old = {gv.name_hint: f for gv, f in before.functions_items()}
    new = {gv.name_hint: f for gv, f in after.functions_items()}
    return old.keys() != new.keys() or any(not f.same_as(old[k]) for k, f in new.items())


def _run_statement(stmt: Statement, ns: dict[str, Any], mod: Any, filename: str) -> Applied:
    """Run one statement with ``mod`` bound to a copy of the module; return what it applied."""
    given = mod.clone()
    ns["mod"] = given
    node = stmt.node
    label = stmt.text.strip().splitlines()[0]
    if isinstance(node, ast.Expr):
        code = compile(ast.Expression(node.value), filename, "eval")
        applied = apply_value(eval(code, ns), given, label)  # noqa: S307 - the user's cell
        if applied is not None:
            return applied
    else:
        exec(compile(ast.Module([node], []), filename, "exec"), ns)  # noqa: S102
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                value = ns.get(target.id) if isinstance(target, ast.Name) else None
                if isinstance(value, tvm_compat.ir_module_type()) and not value.same_as(mod):
                    return [(target.id, value)]
    current = ns.get("mod")
    if isinstance(current, tvm_compat.ir_module_type()) and current is not given:
        return [("mod", current)]
    if current is given and _changed_in_place(mod, given):
        return [(label, given)]
    return []


def run_pass_cell(
    source: str,
    mod: Any,
    *,
    namespace: dict[str, Any] | None = None,
    first_line: int = 2,
) -> PassRun:
    """Run pass ``source`` on ``mod`` statement by statement; every pass applied is a step.

    Parameters
    ----------
    source
        One pass or rewrite per statement: ``relax.transform.FuseTIR()``, ``EwiseFMARewriter()``,
        ``MatmulAddFusor(mod).transform()``, ``MLPFused = FuseDenseAddPass()(MLPModel)``, class and
        function definitions, ``mod.update_func(...)``. ``mod`` is the module so far.
    mod
        The IRModule to transform (never modified).
    namespace
        Names the code may read (copied; nothing is written back).
    first_line
        Cell line of the first line of ``source`` (2 below a ``%%`` magic line).

    Returns
    -------
    PassRun
        With ``error`` set (a :class:`PassStepError` at its cell line) when a statement failed;
        the steps before it are kept and ``mod`` is ``None``.
    """
    translated = translate(source).source
    offset, raw = first_line - 1, source.splitlines()
    initial_script, counts = mod.script(), module_op_counts(mod)
    try:
        statements = top_level_statements(translated)
    except SyntaxError as err:
        text = raw[(err.lineno or 1) - 1] if raw else ""
        error = PassStepError(f"syntax error: {err.msg}", line=(err.lineno or 1) + offset,
                              column=err.offset or 1, source_line=text)  # fmt: skip
        return PassRun(initial_script, mod, (), error, initial_op_counts=counts, code=source)
    _counter[0] += 1
    filename = _FILE.format(_counter[0])
    linecache.cache[filename] = (len(translated), None, translated.splitlines(True), filename)
    ns: dict[str, Any] = {**tvm_compat.script_namespaces(), **(namespace or {})}
    ns["__name__"] = "__mlc_passes__"
    steps: list[PassStep] = []
    current, current_script = mod, initial_script
    for stmt in statements:
        try:
            applied = _run_statement(stmt, ns, current, filename)
        except Exception as err:  # noqa: BLE001 - any failure becomes a located step error
            error = _located(err, stmt, raw, offset, filename)
            return PassRun(initial_script, mod, tuple(steps), error, None, {}, counts, source)
        for name, after in applied:
            step = _step(len(steps) + 1, name, stmt, raw, offset, current, current_script, after)
            steps.append(step)
            current, current_script = after, step.script
    ns["mod"] = current
    user = {k: v for k, v in ns.items() if k not in ("__builtins__", "__name__")}
    return PassRun(initial_script, mod, tuple(steps), None, current, user, counts, source)


def run_pipeline(mod: Any, name: str = "default", target: Any = None) -> PassRun:
    """Run the named Relax pipeline on ``mod`` and record each of its passes as a step.

    ``name`` is one of ``tvm_compat.relax_pipeline_names()`` (``default``: what ``tvm.compile``
    runs; ``target``: legalize + FuseOps + FuseTIR for ``target``, the host CPU by default).
    """
    names = tvm_compat.relax_pipeline_names()
    if name not in names:
        raise ValueError(f"unknown pipeline {name!r}; known: {', '.join(names)}")
    resolved = resolve_target(target)
    initial_script, counts = mod.script(), module_op_counts(mod)
    code = f"# pipeline {name!r}"
    steps: list[PassStep] = []
    current, current_script = mod, initial_script
    try:
        with resolved:
            applied = observe_pass(tvm_compat.relax_pipeline(name, resolved), mod)
    except Exception as err:  # noqa: BLE001
        error = PassStepError(pass_reason(err), line=1, source_line=f"--pipeline {name}")
        return PassRun(initial_script, mod, (), error, None, {}, counts, code)
    for pass_name, after in applied:
        step = _step(len(steps) + 1, pass_name, None, [], 0, current, current_script, after)
        steps.append(step)
        current, current_script = after, step.script
    return PassRun(initial_script, mod, tuple(steps), None, current, {}, counts, code)


def export_passes(run: PassRun) -> str:
    """Code that, as a ``%%mlc_passes`` cell body, reproduces the run's final module."""
    if run.code.startswith("# pipeline"):
        return "\n".join(f"{_pass_expression(s.name)}" for s in run.steps)
    return run.code


def _pass_expression(name: str) -> str:
    """``relax.transform.X()`` for a pass TVM has under that name, else a comment."""
    relax = tvm_compat.tvm().relax
    for namespace, prefix in (
        (relax.transform, "relax.transform"),
        (relax.backend, "relax.backend"),
    ):
        if callable(getattr(namespace, name, None)):
            return f"{prefix}.{name}()"
    return f"# {name} (no relax.transform.{name}: part of the pipeline)"
