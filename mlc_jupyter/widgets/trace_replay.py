"""The trace replay widget: step through a trace, edit its decisions, re-time, pick, export.

State lives in traits; the front end (``trace_replay.js``) only draws them and sends four kinds
of messages back (``edit``, ``retime``, ``pick``, ``export`` / ``reset``), which Python turns
into service calls on a :class:`~mlc_jupyter.trace.session.TraceSession`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anywidget
import traitlets as t

from ..compilation import resolve_target
from ..dialect import course_spelling
from ..display.highlight import highlight_html
from ..display.roofline import RooflinePoint, roofline_svg
from ..display.timing import format_time
from ..display.trace import decision_text, step_groups, trace_bundle
from ..errors import MLCError
from ..measure.machine import cached_machine_limits, kernel_cores
from ..schedule.irdiff import changed_lines, unified_diff
from ..trace import load_trace
from .esm import widget_esm
from .messages import handle_showing_errors

_HERE = Path(__file__).parent


def _changes(before: str, after: str) -> tuple[list[int], str]:
    """Lines of ``after`` that differ from ``before`` (1-based) and a unified diff."""
    return changed_lines(before, after), unified_diff(before, after)


def _step_dict(step: Any, spell: Callable[[str], str] = str) -> dict[str, Any]:
    info = step.decision
    decision = None
    if info is not None:
        decision = {
            "kind": info.kind,
            "value": info.value,
            "text": decision_text(step),
            "n": info.n,
            "extent": info.extent,
            "choices": [[c, label] for c, label in info.choices],
        }
    return {
        "index": step.index,
        "kind": step.kind,
        "text": spell(step.text),
        "block": step.block,
        "postproc": step.postproc,
        "decision": decision,
    }


class TraceReplay(anywidget.AnyWidget):
    """Walk a schedule trace step by step, edit sampling decisions, replay and re-time.

    Parameters
    ----------
    obj
        A Schedule, Trace, JSON trace, ``TuneResult`` or tuning record.
    mod
        The module the trace was recorded on (needed for a Schedule / Trace / JSON unless
        ``candidates`` holds it).
    bind
        Called with the :class:`~mlc_jupyter.trace.session.ReplayResult` the user picks.
    """

    _esm = widget_esm("trace_replay")
    _css = _HERE / "trace_replay.css"

    title = t.Unicode("").tag(sync=True)
    steps = t.List(t.Dict()).tag(sync=True)
    groups = t.List(t.Dict()).tag(sync=True)
    n_steps = t.Int(0).tag(sync=True)
    step = t.Int(0).tag(sync=True)
    ir_html = t.Unicode("").tag(sync=True)
    diff_text = t.Unicode("").tag(sync=True)
    changed = t.List(t.Int()).tag(sync=True)
    error = t.Unicode("").tag(sync=True)
    status = t.Unicode("").tag(sync=True)
    history = t.List(t.Dict()).tag(sync=True)
    roofline_html = t.Unicode("").tag(sync=True)
    picked = t.Int(-1).tag(sync=True)
    bind_name = t.Unicode("").tag(sync=True)
    export_text = t.Unicode("").tag(sync=True)
    # "tvm": the IR and instructions as TVM 0.27 prints them; "course": in the book's spelling
    # (T.block for T.sblock, get_block), offered when the notebook runs in course mode
    spelling = t.Unicode("tvm").tag(sync=True)
    offer_course_spelling = t.Bool(False).tag(sync=True)

    def __init__(
        self,
        obj: Any = None,
        mod: Any = None,
        *,
        session: Any = None,
        candidates: Any = (),
        mod_name: str = "mod",
        bind: Callable[[Any], None] | None = None,
        bind_name: str = "",
        target: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if session is None:
            session = load_trace(obj, mod, candidates)
        self.session = session
        self.mod_name = mod_name
        if target is not None:
            session.target = target  # --target: re-time for it rather than the tuned one
        self.target = session.target
        self.result: Any = None
        self._bind = bind
        self.bind_name = bind_name
        self.title = f"{session.label} · {session.n_steps} instructions"
        self._sync_steps()
        self.step = session.n_steps
        self._draw()
        self.observe(self._respell, names=["spelling"])
        self.on_msg(self._on_message)

    def _spelled(self, text: str) -> str:
        return course_spelling(text) if self.spelling == "course" else text

    def _respell(self, _change: Any = None) -> None:
        self._sync_steps()
        self._draw()

    # -- Python API (what the buttons do) ---------------------------------------------------------
    def edit(self, index: int, value: Any) -> bool:
        """Set a decision; on a refusal show the reason and keep the previous state."""
        try:
            self.session.set_decision(index, value)
        except MLCError as err:
            self.error = f"instruction {index + 1}: {err}" + (f" ({err.hint})" if err.hint else "")
            return False
        self.error = ""
        self.status = f"instruction {index + 1}: decision {self.session.decisions()[index]}"
        self._sync_steps()
        self._draw()
        return True

    def retime(self) -> Any:
        """Build and time the current trace; add a row to the history table."""
        self.status = "timing…"
        row = self.session.retime(self.target)
        self.history = [*self.history, self._row_dict(len(self.history), row)]
        self.roofline_html = self._roofline()
        self.status = (
            f"timed: {format_time(row.latency_s)}" if row.latency_s else (f"failed: {row.error}")
        )
        return row

    def pick(self, row: int | None = None) -> Any:
        """Take a history row (default: the fastest correct one) as the result and bind it."""
        if row is None:
            best = self.session.best()
            if best is None:
                self.error = "no timed row to pick: press Re-time first"
                return None
            row = self.session.history.index(best)
        self.result = self.session.result(row)
        self.picked = row
        if self._bind is not None:
            self._bind(self.result)
        self.status = f"row {row + 1} bound to {self.bind_name}" if self.bind_name else ""
        return self.result

    def export(self, fmt: str = "code") -> str:
        """The current trace as a ``%%mlc_schedule`` cell (``code``) or as JSON (``json``)."""
        if fmt == "json":
            text = self.session.export_json()
        else:
            text = self.session.export_code(self.mod_name, self.bind_name or None)
        self.export_text = text
        return text

    def reset(self) -> None:
        """Back to the decisions the trace came with."""
        self.session.reset()
        self.error = ""
        self._sync_steps()
        self._draw()

    # -- internals ---------------------------------------------------------------------------------
    @t.observe("step")
    def _on_step(self, change: Any) -> None:
        clamped = max(0, min(int(change["new"]), self.n_steps))
        if clamped != change["new"]:
            self.step = clamped
            return
        self._draw()

    def _draw(self) -> None:
        k = self.step
        after = self._spelled(self.session.module_at(k).script())
        before = self._spelled(self.session.module_at(k - 1).script()) if k > 0 else after
        lines, diff = _changes(before, after)
        self.changed = lines
        self.diff_text = diff
        self.ir_html = highlight_html(after, marked_lines=set(lines))

    def _sync_steps(self) -> None:
        self.n_steps = self.session.n_steps
        self.steps = [_step_dict(s, self._spelled) for s in self.session.steps]
        self.groups = [
            {"label": label, "first": members[0].index, "last": members[-1].index}
            for label, members in step_groups(self.session.steps)
        ]

    @staticmethod
    def _row_dict(index: int, row: Any) -> dict[str, Any]:
        return {
            "row": index,
            "decisions": "; ".join(f"#{i + 1}: {v}" for i, v in row.decisions.items()),
            "latency_ms": row.latency_s * 1e3 if row.latency_s else None,
            "latency": format_time(row.latency_s) if row.latency_s else "",
            "gflops": row.gflops,
            "peak_pct": 100 * row.peak_fraction if row.peak_fraction else None,
            "correct": row.correct,
            "error": row.error,
        }

    def _roofline(self) -> str:
        """The timed rows on this machine's roofline (empty until its limits are known)."""
        limits = cached_machine_limits()
        points = [
            RooflinePoint(f"row {n + 1}", r.intensity, r.gflops)
            for n, r in enumerate(self.session.history)
            if r.intensity and r.gflops and r.peak_fraction
        ]
        if limits is None or not points:
            return ""
        return roofline_svg(points, limits, kernel_cores(resolve_target(self.target)))

    def _on_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        handle_showing_errors(self, lambda: self._handle(content))

    def _handle(self, content: Any) -> None:
        kind = content.get("type") if isinstance(content, dict) else None
        if kind == "edit":
            self.edit(int(content["index"]), content["value"])
        elif kind == "retime":
            self.retime()
        elif kind == "pick":
            self.pick(int(content["row"]))
        elif kind == "export":
            self.export(content.get("format", "code"))
        elif kind == "reset":
            self.reset()

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        bundle = super()._repr_mimebundle_(**kwargs)
        fallback = trace_bundle(self.session, self.step)
        if isinstance(bundle, tuple):
            data, meta = bundle
            return {**data, **fallback}, meta
        return bundle
