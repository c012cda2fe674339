"""A schedule being built one statement at a time (interactive mode): apply, undo, redo, export.

Every change re-runs the whole code on a fresh schedule, so the state can never drift from the
code that export returns.
"""

from __future__ import annotations

from typing import Any

from ..errors import ScheduleStepError
from ..tvm_compat import GET_BLOCK_METHOD, get_block, is_schedule
from .looptree import loop_tree
from .steps import ScheduleRun, export_steps, run_schedule_cell

__all__ = ["PRIMITIVES", "ScheduleSession", "driven_schedule_steps", "statement_for"]

# primitive -> the fields a user fills: "loop" (a loop of the chosen block), "loops" (several),
# "block" (another block), "target_loop" (a loop of another block), or a text field "name=default".
PRIMITIVES: dict[str, tuple[str, ...]] = {
    "split": ("loop", "factors=[None, 4]"),
    "reorder": ("loops",),
    "fuse": ("loops",),
    "parallel": ("loop",),
    "vectorize": ("loop",),
    "unroll": ("loop",),
    "bind": ("loop", 'thread_axis="threadIdx.x"'),
    "compute_at": ("target_loop",),
    "reverse_compute_at": ("target_loop",),
    "compute_inline": (),
    "reverse_compute_inline": (),
    "decompose_reduction": ("loop",),
    "cache_read": ("read_buffer_index=0", 'storage_scope="global"'),
    "cache_write": ("write_buffer_index=0", 'storage_scope="global"'),
    "blockize": ("loop",),
    "tensorize": ("loop", 'tensor_intrin=""'),
    "annotate": ("loop", 'ann_key="pragma_unroll_explicit"', "ann_val=1"),
}


def driven_schedule_steps(obj: Any) -> str | None:
    """The steps (schedule code) of an object that drives a TensorIR schedule of a module it
    keeps (``.sch``, ``.start_mod``: course mode's TE schedule); ``None`` for anything else."""
    if getattr(obj, "start_mod", None) is None or not is_schedule(getattr(obj, "sch", None)):
        return None
    return export_steps(obj)


def _block(block: str) -> str:
    """Schedule code for the handle of block ``block``."""
    return f'sch.{GET_BLOCK_METHOD}("{block}")'


def _loops(block: str, index: int) -> str:
    return f"sch.get_loops({_block(block)})[{int(index)}]"


def statement_for(primitive: str, block: str, args: dict[str, Any]) -> str:
    """The line of schedule code for ``primitive`` on ``block`` with the menu choices ``args``.

    ``args`` holds ``loop`` (index into the block's loops), ``loops`` (list of indices),
    ``target_block`` + ``target_loop`` and the text fields by name.
    """
    if primitive not in PRIMITIVES:
        raise ScheduleStepError(f"unknown primitive {primitive!r}", line=1)
    parts: list[str] = []
    for field in PRIMITIVES[primitive]:
        if field == "loop":
            parts.append(_loops(block, args.get("loop", 0)))
        elif field == "loops":
            parts.extend(_loops(block, i) for i in args.get("loops", []))
        elif field == "target_loop":
            parts.append(_loops(args.get("target_block", block), args.get("target_loop", 0)))
        else:
            name, default = field.split("=", 1)
            value = str(args.get(name, default)).strip() or default
            parts.append(f"{name}={value}")
    takes_block = primitive in (
        "compute_at", "reverse_compute_at", "compute_inline", "reverse_compute_inline",
        "decompose_reduction", "cache_read", "cache_write",
    )  # fmt: skip
    if takes_block:
        parts.insert(0, _block(block))
    return f"sch.{primitive}({', '.join(parts)})"


class ScheduleSession:
    """Schedule code for ``mod`` that grows statement by statement, with undo and redo.

    Parameters
    ----------
    mod
        The module to schedule (never modified).
    code
        Initial schedule code (for example a ``%%mlc_schedule`` cell body).
    first_line
        Cell line of the first line of ``code`` (2 below a magic line, 1 in interactive mode).

    ``mod`` may also be an object that drives a TensorIR schedule (``.sch``) of the module it
    started from (``.start_mod``), as course mode's TE schedule does: the session then schedules
    that module, starting from the steps it took (with ``code`` empty: interactive mode).
    """

    def __init__(
        self,
        mod: Any,
        code: str = "",
        *,
        namespace: dict[str, Any] | None = None,
        func_name: str | None = None,
        first_line: int = 1,
    ) -> None:
        steps = driven_schedule_steps(mod)
        if steps is not None:
            if code.strip():
                raise ValueError("a schedule's own steps open the interactive stepper only")
            mod, code = mod.start_mod, steps
        self.mod, self.namespace, self.func_name = mod, dict(namespace or {}), func_name
        self.first_line = first_line
        self.lines: list[str] = code.splitlines()
        self.redo_stack: list[str] = []
        self.run: ScheduleRun = self._rerun()

    def _rerun(self) -> ScheduleRun:
        return run_schedule_cell(
            "\n".join(self.lines),
            self.mod,
            namespace=self.namespace,
            func_name=self.func_name,
            first_line=self.first_line,
        )

    @property
    def code(self) -> str:
        return "\n".join(self.lines)

    def apply(self, statement: str) -> ScheduleRun:
        """Append ``statement``; if it fails it is dropped and its error raised (state unchanged)."""
        candidate = [*self.lines, statement]
        before = self.lines
        self.lines = candidate
        run = self._rerun()
        if run.error is not None:
            self.lines = before
            raise run.error
        self.run, self.redo_stack = run, []
        return run

    def undo(self) -> bool:
        """Drop the last statement (and statements without a step, like ``b = ...``)."""
        return self._move_last(self.lines, self.redo_stack)

    def redo(self) -> bool:
        return self._move_last(self.redo_stack, self.lines)

    def _move_last(self, source: list[str], dest: list[str]) -> bool:
        """Move the last statement of ``source`` to ``dest`` and replay; False when none."""
        if not source:
            return False
        dest.append(source.pop())
        self.run = self._rerun()
        return True

    def blocks(self) -> dict[str, list[str]]:
        """Block name -> labels of its loops (outer to inner), from the current IR."""
        sch = self.run.sch
        out: dict[str, list[str]] = {}
        if sch is None:
            return out
        names: list[str] = []

        def walk(nodes: list[dict]) -> None:
            for node in nodes:
                if node["kind"] == "block":
                    names.append(node["label"])
                walk(node["children"])

        walk(loop_tree(sch.mod.script()))
        for name in names:
            try:
                loops = sch.get_loops(get_block(sch, name))
            except Exception:  # noqa: BLE001,S112 - a name shared by several functions
                continue
            labels = []
            for rv in loops:
                loop = sch.get(rv)
                labels.append(f"{loop.loop_var.name} ({loop.extent})")
            out[name] = labels
        return out

    def export(self) -> str:
        """The code, ready to paste into a ``%%mlc_schedule`` cell."""
        return self.code
