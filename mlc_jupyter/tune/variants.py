"""Epilogue variants: kernels that share an anchor operator, searched once.

A model's convolutions often differ only in what is fused after them: ResNet-18 has four 3x3
convolutions of one shape, each followed by batch norm and then ``relu``, a residual ``add`` or
``add`` + ``relu``. The tile that suits one suits them all, so searching each on its own spends
the budget four times on one question. As AutoTVM keyed its tasks by the anchor operator (and
MetaSchedule's ``"anchor-block"`` module equality does), the whole-model tuner joins the groups
whose anchor blocks (:func:`~mlc_jupyter.tvm_compat.anchor_block`, the reduction) are
structurally equal into one family: its largest kernel is searched with the family's share of
the budget, and its best decisions are replayed on the others (transfer tuning).

A replay moves decisions, not instructions: the lead's best trace is found among its design
spaces (by its structure, decisions aside), the variant's design space of the same index is
generated, and the lead's sampling decisions are given to the variant's sampling instructions in
order, which must ask the same questions (kinds and candidates). The variant's space's
postprocessors then run on the result, as MetaSchedule runs them on every candidate. TVM's
``schedule_using_anchor_trace`` replays MetaSchedule's own rules' traces; the direct-convolution
space inlines each epilogue block by name, which it refuses. A variant whose replay fails, or is
not clearly faster than its default schedule, keeps the default (:mod:`.whole_model` decides).
This module imports TVM at import time; import it lazily.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..tvm_compat import (
    Schedule,
    anchor_block,
    make_trace,
    structural_equal,
    tune_context,
)
from .model_plan import TaskGroup
from .spaces.choice import choose_spaces


@dataclass(frozen=True)
class Replay:
    """A variant scheduled with a lead's decisions (``mod``'s ``main``, and the ``trace`` that
    makes it from the variant's workload, postprocessors included), or why it could not be."""

    mod: Any | None
    trace: Any | None = None
    reason: str = ""


def join_variants(groups: list[TaskGroup]) -> list[TaskGroup]:
    """``groups`` (largest share first) with each group whose anchor block equals an earlier
    group's moved into that group's ``variants``: one family, searched once."""
    leads: list[tuple[Any, TaskGroup]] = []  # a model has a few dozen kernels: compared in turn
    out = []
    for group in groups:
        anchor = anchor_block(group.lead.workload)
        lead = next((g for a, g in leads if anchor is not None and _same_anchor(a, anchor)), None)
        if lead is not None:
            lead.variants.append(group)
            continue
        if anchor is not None:
            leads.append((anchor, group))
        out.append(group)
    return sorted(out, key=lambda g: -g.share)


def _same_anchor(a: Any, b: Any) -> bool:
    """Whether two anchor blocks compute the same thing (their buffers matched by position)."""
    return structural_equal(a, b, map_free_vars=True)


def replay_decisions(lead: Any, trace: Any, variant: Any, target: Any, space: Any) -> Replay:
    """``variant`` (a one-kernel workload) scheduled with the decisions of ``trace``, the best
    schedule of ``lead`` found in the design space ``space`` names for ``target``."""
    try:
        return _replay(lead, trace, variant, target, space)
    except Exception as err:  # noqa: BLE001 - TVM refused a step: the variant keeps its default
        first = next((ln for ln in str(err).splitlines() if ln.strip()), type(err).__name__)
        return Replay(None, reason=f"{type(err).__name__}: {first.strip()[:200]}")


def _replay(lead: Any, trace: Any, variant: Any, target: Any, space: Any) -> Replay:
    best = trace.simplified(remove_postproc=True)
    lead_space, lead_schedules, _ = _design_spaces(lead, target, space)
    shape = _skeleton(best.insts)
    index = next(
        (i for i, s in enumerate(lead_schedules) if _skeleton(_decided(s.trace)) == shape), None
    )
    if index is None:
        return Replay(None, reason="its best schedule is in none of its design spaces")
    variant_space, variant_schedules, context = _design_spaces(variant, target, space)
    if variant_space != lead_space or len(variant_schedules) != len(lead_schedules):
        return Replay(None, reason=f"searched in the {variant_space} space, not {lead_space}")
    own = variant_schedules[index].trace.simplified(remove_postproc=True)
    asked = [inst for inst in best.insts if inst in best.decisions]
    answered = [inst for inst in own.insts if inst in own.decisions]
    if _questions(asked) != _questions(answered):
        return Replay(None, reason="its design space samples other choices")
    decisions = {mine: best.decisions[theirs] for mine, theirs in zip(answered, asked, strict=True)}
    sch = Schedule(variant)
    make_trace(own.insts, decisions).apply_to_schedule(sch, remove_postproc=True)
    sch.enter_postproc()
    for postproc in context.space_generator.postprocs:
        if not postproc.apply(sch):
            return Replay(None, reason=f"{type(postproc).__name__} refused the replayed schedule")
    return Replay(sch.mod, sch.trace)


def _design_spaces(mod: Any, target: Any, space: Any) -> tuple[str, list[Any], Any]:
    """The name of the design space the tuner gives ``mod``, its traced schedules (one per
    variant of the space) and the MetaSchedule context that made them (its postprocessors)."""
    spaces = choose_spaces([mod], target, space)
    context = tune_context(
        mod=mod, target=target, space_generator=spaces.generators[0], task_name="replay",
        num_threads=1,
    ).clone()  # fmt: skip
    return spaces.names[0], list(context.generate_design_space()), context


def _decided(trace: Any) -> list[Any]:
    """A design space's instructions, dead ones and postprocessors dropped."""
    return list(trace.simplified(remove_postproc=True).insts)


def _skeleton(insts: list[Any]) -> list[tuple[Any, ...]]:
    """Instructions as their kinds, attributes and which earlier output each input is: two
    traces of one design space agree here whatever their decisions."""
    made: dict[Any, tuple[int, int]] = {}
    out = []
    for index, inst in enumerate(insts):
        inputs = tuple(made.get(x, str(x)) if _hashable(x) else str(x) for x in inst.inputs)
        out.append((inst.kind.name, tuple(str(a) for a in inst.attrs), inputs))
        for position, rv in enumerate(inst.outputs):
            made[rv] = (index, position)
    return out


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _questions(insts: list[Any]) -> list[tuple[str, tuple[str, ...]]]:
    """What each sampling instruction asks: its kind and attributes (the candidates, a tile's
    parts and largest inner factor)."""
    return [(inst.kind.name, tuple(str(a) for a in inst.attrs)) for inst in insts]
