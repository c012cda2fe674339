"""How a model's tuning computes each 3x3 stride-1 layer: direct, F(2x2, 3x3) or F(4x4, 3x3).

A build picks by rule (:func:`~mlc_jupyter.compilation.winograd.plan_for`), and leaves direct some
layers that Winograd computes faster: more Winograd kernels cost a cold build compile time it
cannot spare. A tuning spends minutes, so it asks each layer that has more than one way
(:func:`~mlc_jupyter.compilation.winograd.tile_options`; one question per layer shape,
:func:`~mlc_jupyter.compilation.default_schedule.winograd_candidates`): the convolution alone,
each way with its default schedule, timed in turns on the same input. Alone, a kernel finds its
weights in the cache; in the model each layer reads its own from memory, and a Winograd way's
transformed weights are larger than the direct one's. So a way that alone is clearly faster
(:func:`.timing.clearly_faster`) than the build's is timed once more in the whole model, the
build's model against the same model with only that layer changed, in turns, and taken only
where the model is clearly faster with it too. The layers so changed are the tuning's plan
(their kernels are its tasks, and the tuned model is built with them), and the whole tuned
model is still timed against the default build at the end, which is kept when it is faster.

The answers are kept with the plan in the model's work dir, so a run that resumes makes the
same plan.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..compilation import winograd
from ..compilation.conv_schedule import vector_unit
from ..compilation.default_schedule import prepare_model, winograd_candidates
from ..errors import MLCError
from ..tvm_compat import one_call_module, prim_func_type
from .timing import COMPARE_ROUNDS, KernelSamplers, clearly_faster, in_turns, kernel_module

#: Rounds of the whole-model timing in turns, and the least seconds of one sample: a layer's
#: way moves a model's time by a few percent, so the model is sampled longer than a kernel.
MODEL_ROUNDS = 15
MODEL_SAMPLE_S = 0.1


def way_name(tile: int) -> str:
    """``direct``, ``F(2x2)`` or ``F(4x4)``."""
    return "direct" if tile == winograd.DIRECT else f"F({tile}x{tile})"


@dataclass(frozen=True)
class LayerChoice:
    """One layer shape (:func:`~mlc_jupyter.compilation.winograd.layer_key`), the build's way,
    each way's seconds a call alone (``None`` where it could not be timed) and, where a way other
    than the build's was faster alone, the whole model's seconds a call with the layer the
    build's way and that way (``in_model``; ``None`` when the model was not timed)."""

    key: str
    build: int
    seconds: dict[int, float | None] = field(default_factory=dict)
    in_model: dict[int, float] | None = None

    @property
    def fastest_alone(self) -> int:
        """The fastest way alone, where it is clearly faster than the build's (else the build's)."""
        timed = {t: s for t, s in self.seconds.items() if s is not None}
        if not timed:
            return self.build
        fastest = min(timed, key=timed.__getitem__)
        return fastest if clearly_faster(timed[fastest], timed.get(self.build)) else self.build

    @property
    def tile(self) -> int:
        """The way the tuning takes: the fastest alone, where the model with it is clearly faster
        too (or could not be timed)."""
        way = self.fastest_alone
        if way == self.build or self.in_model is None:
            return way
        faster = clearly_faster(self.in_model.get(way), self.in_model.get(self.build))
        return way if faster else self.build

    @property
    def way_not_taken(self) -> int | None:
        """The other way the whole model was timed with (``None`` when it was not): the two
        were compared on default schedules, and they tune differently, so a tuning with budget
        left tunes this one too and compares again."""
        if self.in_model is None:
            return None
        taken = self.tile
        other = self.fastest_alone if taken == self.build else self.build
        return None if other == taken else other

    def note(self) -> str:
        """What the tuning chose for the layer, and why, for the result's notes."""
        verdict = "kept as built" if self.tile == self.build else f"now {way_name(self.tile)}"
        why = f"alone, in turns: {_times(self.seconds, 'us')}"
        if self.in_model is not None:
            why += f"; the whole model, in turns: {_times(self.in_model, 'ms')}"
        return f"{self.key}: {verdict} (the build's: {way_name(self.build)}; {why})"


def _times(seconds: Mapping[int, float | None], unit: str) -> str:
    scale, digits = (1e6, 0) if unit == "us" else (1e3, 3)
    return ", ".join(
        f"{way_name(t)} {s * scale:.{digits}f} {unit}"
        if s is not None
        else f"{way_name(t)} not timed"
        for t, s in sorted(seconds.items())
    )


def choose_layers(mod: Any, target: Any, saved: dict[str, Any] | None = None) -> list[LayerChoice]:
    """Each layer of ``mod`` with more than one way, each way timed on ``target``, alone and,
    where another way than the build's is faster alone, in the model (``saved``: the answers of
    a run before, as :func:`as_saved` wrote them, taken as they are)."""
    if saved is not None:
        try:
            return [_from_saved(key, entry) for key, entry in saved.items()]
        except (KeyError, TypeError, ValueError, AttributeError):
            pass  # written by another version: timed again
    choices = [
        _time_layer(key, call, target) for key, call in winograd_candidates(mod, target).items()
    ]
    return [
        c
        if c.fastest_alone == c.build
        else replace(c, in_model=time_in_model(mod, target, c, c.fastest_alone))
        for c in choices
    ]


def time_in_model(mod: Any, target: Any, layer: LayerChoice, way: int) -> dict[int, float] | None:
    """The whole model's seconds a call as built and with ``layer`` computed ``way``, timed in
    turns on the same inputs, by way (``None`` when the model cannot be built or run here:
    inputs it cannot make, say)."""
    samplers = KernelSamplers(target, min_sample_s=MODEL_SAMPLE_S)
    try:
        built = prepare_model(mod, target).mod
        changed = prepare_model(mod, target, winograd_tiles={layer.key: way}).mod
        seconds = in_turns([samplers.add(built), samplers.add(changed)], MODEL_ROUNDS)
    except MLCError:
        return None
    return {layer.build: seconds[0], way: seconds[1]}


def chosen(choices: list[LayerChoice]) -> dict[str, int]:
    """The layers whose way differs from the build's, and that way."""
    return {c.key: c.tile for c in choices if c.tile != c.build}


def ways_not_taken(choices: list[LayerChoice]) -> dict[str, int]:
    """The layers the whole model was timed with two ways, and the way not taken."""
    return {c.key: c.way_not_taken for c in choices if c.way_not_taken is not None}


def as_saved(choices: list[LayerChoice]) -> dict[str, Any]:
    """``choices`` as :func:`choose_layers` takes them back from a work dir (JSON)."""
    return {
        c.key: {
            "build": c.build,
            "seconds": {str(t): s for t, s in c.seconds.items()},
            **(
                {}
                if c.in_model is None
                else {"in_model": {str(t): s for t, s in c.in_model.items()}}
            ),
        }
        for c in choices
    }


def _from_saved(key: str, entry: dict[str, Any]) -> LayerChoice:
    in_model = entry.get("in_model")
    return LayerChoice(
        key,
        int(entry["build"]),
        {int(t): s for t, s in entry["seconds"].items()},
        None if in_model is None else {int(t): s for t, s in in_model.items()},
    )


def _time_layer(key: str, call: Any, target: Any) -> LayerChoice:
    unit = vector_unit(target)
    plan = winograd.plan_for(call, unit.lanes, unit.registers)
    build = plan.m if plan is not None else winograd.DIRECT
    alone = one_call_module(call)
    ways = winograd.tile_options(call, unit.lanes)
    kernels = {t: _kernel(prepare_model(alone, target, winograd_tiles={key: t}).mod) for t in ways}
    samplers = KernelSamplers(target)
    timed = [t for t in ways if kernels[t] is not None]
    try:
        seconds = in_turns([samplers.add(kernel_module(kernels[t])) for t in timed], COMPARE_ROUNDS)
    except MLCError:  # a way that does not build or run here is not chosen
        return LayerChoice(key, build, dict.fromkeys(ways))
    found = dict(zip(timed, seconds, strict=True))
    return LayerChoice(key, build, {t: found.get(t) for t in ways})


def _kernel(mod: Any) -> Any | None:
    """The one kernel of a prepared one-convolution module (``None`` when it made more)."""
    kernels = [f for _, f in mod.functions_items() if isinstance(f, prim_func_type())]
    return kernels[0] if len(kernels) == 1 else None


__all__ = [
    "LayerChoice",
    "as_saved",
    "choose_layers",
    "chosen",
    "time_in_model",
    "way_name",
    "ways_not_taken",
]
