"""A trace being explored: replay the first k instructions, edit decisions, re-time, export.

Every module shown is replayed on a fresh schedule of the original module, so what a user sees
is exactly what the trace (with its current decisions) produces.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..errors import TraceError, error_reason
from ..schedule.handle_names import cell_names, named_as_in_the_cell
from ..tvm_compat import (
    GET_BLOCK_INSTRUCTION,
    Schedule,
    block_rv_type,
    get_block,
    loop_rv_type,
    make_trace,
)
from . import decisions as dec
from .load import TraceSource, load, to_json_value
from .timing import TraceTiming, time_replayed

POSTPROC = "EnterPostproc"


@dataclass(frozen=True)
class ReplayResult:
    """What the trace replay widget binds when a user picks a row: the module and its trace."""

    mod: Any
    trace: Any
    workload: Any
    decisions: dict[int, Any]
    latency_s: float | None = None
    gflops: float | None = None
    correct: bool | None = None
    #: the target the trace was tuned for (``%mlc_build`` / ``%mlc_time`` build for it)
    target: Any = None


@dataclass(frozen=True)
class Step:
    """One instruction of the trace as the widget lists it."""

    index: int
    kind: str
    text: str
    block: str
    postproc: bool
    decision: dec.DecisionInfo | None = None


class TraceSession:
    """A trace, the module it schedules, its current decisions and a history of timings.

    Parameters
    ----------
    trace
        A schedule trace (``sch.trace``).
    mod
        The module the trace was recorded on (replays start from a fresh schedule of it).
    final
        The module the original schedule produced, when known (to check the replay).
    """

    def __init__(
        self, trace: Any, mod: Any, *, final: Any = None, label: str = "trace", target: Any = None
    ) -> None:
        self.mod = mod
        #: the target the trace was tuned for: re-timing builds for it unless told otherwise
        self.target = target
        self.original_trace = trace
        self.final = final
        self.label = label
        self.history: list[TraceTiming] = []
        self._set_trace(trace)

    @classmethod
    def load(cls, obj: Any, mod: Any = None, candidates: Iterable[Any] = ()) -> TraceSession:
        """A session for any source :func:`.load.load` reads."""
        src: TraceSource = load(obj, mod, candidates)
        return cls(src.trace, src.mod, final=src.final, label=src.label, target=src.target)

    # -- reading ---------------------------------------------------------------------------------
    @property
    def trace(self) -> Any:
        return self._trace

    @property
    def n_steps(self) -> int:
        return len(self.steps)

    def module_at(self, k: int) -> Any:
        """The module after the first ``k`` instructions, replayed on a fresh schedule."""
        if not 0 <= k <= self.n_steps:
            raise TraceError(f"step {k} is outside 0..{self.n_steps}")
        if k not in self._modules:
            insts = list(self._trace.insts)[:k]
            decisions = {i: d for i in insts if (d := self._trace.get_decision(i)) is not None}
            sch = Schedule(self.mod)
            make_trace(insts, decisions).apply_to_schedule(sch, remove_postproc=False)
            self._modules[k] = sch.mod
        return self._modules[k]

    @property
    def final_module(self) -> Any:
        return self.module_at(self.n_steps)

    def decisions(self) -> dict[int, Any]:
        """Instruction index -> current decision (plain values) of every sampling instruction."""
        return {s.index: s.decision.value for s in self.steps if s.decision is not None}

    def text(self) -> str:
        """The whole trace as Python (the text of ``trace.show()``)."""
        return "\n".join(named_as_in_the_cell(str(self._trace).splitlines(), self._names))

    # -- editing ---------------------------------------------------------------------------------
    def set_decision(self, index: int, value: Any) -> None:
        """Give instruction ``index`` a new decision and replay; refuse a wrong one.

        Raises :class:`TraceError` with the reason; the session is unchanged then.
        """
        if not 0 <= index < self.n_steps:
            raise TraceError(f"there is no instruction {index} (the trace has {self.n_steps})")
        step = self.steps[index]
        if step.decision is None:
            raise TraceError(f"instruction {index} ({step.kind}) makes no sampling decision")
        value = dec.check(step.decision, dec.parse_value(value))
        inst = self._trace.insts[index]
        new = self._trace.with_decision(inst, value, remove_postproc=False)
        try:
            sch = Schedule(self.mod)
            new.apply_to_schedule(sch, remove_postproc=False)
        except Exception as err:  # noqa: BLE001 - a TVM refusal becomes a short message
            raise TraceError(
                f"the trace does not replay with {value}: {error_reason(err)}"
            ) from None
        self._set_trace(new)

    def reset(self) -> None:
        """Back to the trace the session started from."""
        self._set_trace(self.original_trace)

    # -- exporting -------------------------------------------------------------------------------
    def export_code(self, mod_name: str = "mod", as_name: str | None = None) -> str:
        """A ``%%mlc_schedule`` cell whose body reproduces the current trace on ``mod_name``."""
        head = f"%%mlc_schedule {mod_name}" + (f" --as {as_name}" if as_name else "")
        lines = self._trace.as_python(remove_postproc=False)
        return "\n".join([head, *named_as_in_the_cell(lines, self._names)]) + "\n"

    def export_json(self) -> str:
        """The current trace as JSON (loads back with ``TraceSession.load(text, mod=...)``)."""
        return json.dumps(to_json_value(self._trace.as_json(remove_postproc=False)))

    # -- timing ----------------------------------------------------------------------------------
    def retime(self, target: Any = None) -> TraceTiming:
        """Build and time the current module, compare it with the original, add a history row.

        ``target`` defaults to the one the trace was tuned for (a CUDA trace is timed on the GPU).
        """
        target = target if target is not None else self.target
        row = time_replayed(self.final_module, self.mod, target, self.decisions(), self._trace)
        self.history.append(row)
        return row

    def best(self) -> TraceTiming | None:
        """The fastest correct row of the history."""
        ok = [r for r in self.history if r.latency_s is not None and r.correct is not False]
        return min(ok, key=lambda r: r.latency_s) if ok else None

    def result(self, row: int | None = None) -> ReplayResult:
        """The current trace (``row=None``) or a history row as a :class:`ReplayResult`."""
        if row is None:
            return ReplayResult(
                self.final_module, self._trace, self.mod, self.decisions(), target=self.target
            )
        if not 0 <= row < len(self.history):
            raise TraceError(f"there is no timing row {row} (history has {len(self.history)})")
        r = self.history[row]
        return ReplayResult(
            r.mod, r.trace, self.mod, r.decisions, r.latency_s, r.gflops, r.correct, self.target
        )

    # -- internals -------------------------------------------------------------------------------
    def _set_trace(self, trace: Any) -> None:
        self._trace = trace
        #: the names the cell that made the schedule gave its handles (none for a tuning record)
        self._names = cell_names(trace)
        self._modules: dict[int, Any] = {}
        self.steps: list[Step] = self._analyse(trace)

    def _analyse(self, trace: Any) -> list[Step]:
        """Replay once, noting for each instruction its block, loop extents and the IR before it."""
        insts = list(trace.insts)
        texts = list(trace.as_python(remove_postproc=False))
        if len(texts) != len(insts):
            texts = [inst.kind.name for inst in insts]
        texts = named_as_in_the_cell(texts, self._names)
        sch = Schedule(self.mod)
        block_rv, loop_rv = block_rv_type(), loop_rv_type()
        rv_block: dict[Any, str] = {}
        seen: list[tuple[str, Any]] = []
        counter = iter(range(len(insts)))

        def provider(inst: Any, inputs: Any, attrs: Any, decision: Any) -> Any:
            i = next(counter)
            self._modules[i] = sch.mod
            block = ""
            if inst.kind.name == GET_BLOCK_INSTRUCTION:
                block = str(attrs[0])
            for old, new in zip(inst.inputs, inputs, strict=False):
                if isinstance(new, block_rv):
                    block = sch.get(new).name_hint
                    break
                if isinstance(new, loop_rv) and old in rv_block:
                    block = rv_block[old]
                    break
            block = block or (seen[-1][0] if seen else "")
            for out in inst.outputs:
                rv_block[out] = block
            seen.append((block, self._info(sch, inst, inputs, attrs, decision)))
            return decision

        self._modules = {}
        try:
            trace.apply_to_schedule(sch, remove_postproc=False, decision_provider=provider)
        except Exception as err:  # noqa: BLE001
            raise TraceError(
                f"the trace does not replay on this module: {error_reason(err)}"
            ) from None
        self._modules[len(insts)] = sch.mod
        steps, post = [], False
        for i, (inst, text) in enumerate(zip(insts, texts, strict=True)):
            post = post or inst.kind.name == POSTPROC
            block, info = seen[i]
            if info is not None and info.kind == "compute_location":
                info = self._legal_locations(trace, i, block, info)
            steps.append(Step(i, inst.kind.name, text, block, post, info))
        return steps

    @staticmethod
    def _info(sch: Any, inst: Any, inputs: Any, attrs: Any, decision: Any) -> Any:
        kind = inst.kind.name
        if decision is None and not kind.startswith("Sample"):
            return None
        value = dec.plain(decision)
        if kind in dec.TILE_KINDS:
            extent = sch.get(inputs[0]).extent
            extent = int(extent.value) if hasattr(extent, "value") else None
            inner = int(dec.plain(attrs[1])) if kind == "SamplePerfectTile" else 0
            return dec.DecisionInfo("tile", value, int(dec.plain(attrs[0])), extent, inner)
        if kind == dec.CATEGORICAL:
            return dec.DecisionInfo("categorical", value, choices=dec.categorical_choices(attrs))
        if kind == dec.COMPUTE_LOCATION:
            return dec.DecisionInfo("compute_location", value)
        return dec.DecisionInfo("other", value)

    def _legal_locations(self, trace: Any, index: int, block: str, info: Any) -> Any:
        """The compute locations TVM keeps as given (it snaps others silently), each labelled."""
        insts = list(trace.insts)[: index + 1]
        decisions = {i: d for i in insts if (d := trace.get_decision(i)) is not None}
        legal = []
        for choice in range(-2, self._location_bound(index, block)):
            decisions[insts[-1]] = choice
            sch = Schedule(self.mod)
            try:
                make_trace(insts, decisions).apply_to_schedule(sch, False)
            except Exception:  # noqa: BLE001, S112 - an illegal location is simply not offered
                continue
            last = sch.trace.insts[-1]
            if dec.plain(sch.trace.get_decision(last)) != choice:
                continue
            label = {-2: "inline", -1: "root"}.get(choice, "")
            if not label:
                loop = sch.get(last.outputs[0])
                label = f"loop {loop.loop_var.name} (extent {dec.plain(loop.extent)})"
            legal.append((choice, label))
        return dec.DecisionInfo("compute_location", info.value, choices=tuple(legal))

    def _location_bound(self, index: int, block: str) -> int:
        """More than the number of loops a block could be computed at (its consumers' nests)."""
        try:
            probe = Schedule(self._modules[index])
            rv = get_block(probe, block)
            nests = [len(probe.get_loops(c)) for c in probe.get_consumers(rv)]
            return max([len(probe.get_loops(rv)), *nests]) + 1
        except Exception:  # noqa: BLE001 - an unusual block: offer a generous range
            return 12
