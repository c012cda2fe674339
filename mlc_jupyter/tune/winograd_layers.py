"""How a model's tuning computes each 3x3 stride-1 layer: direct, F(2x2, 3x3) or F(4x4, 3x3).

A build picks by rule (:func:`~mlc_jupyter.compilation.winograd.plan_for`), and leaves direct some
layers that Winograd computes faster: more Winograd kernels cost a cold build compile time it
cannot spare. A tuning spends minutes, so it asks each layer that has more than one way
(:func:`~mlc_jupyter.compilation.winograd.tile_options`; one question per layer shape,
:func:`~mlc_jupyter.compilation.default_schedule.winograd_candidates`): the convolution alone,
each way with its default schedule, timed in turns on the same input. A way other than the
build's is chosen only where it is clearly faster than the build's
(:func:`.timing.clearly_faster`); the layers so changed are the tuning's plan (their kernels are
its tasks, and the tuned model is built with them), and the whole tuned model is still timed
against the default build at the end, which is kept when it is faster.

The answers are kept with the plan in the model's work dir, so a run that resumes makes the
same plan.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..compilation import winograd
from ..compilation.conv_schedule import vector_unit
from ..compilation.default_schedule import prepare_model, winograd_candidates
from ..errors import MLCError
from ..tvm_compat import one_call_module, prim_func_type
from .timing import COMPARE_ROUNDS, KernelSamplers, clearly_faster, in_turns, kernel_module


def way_name(tile: int) -> str:
    """``direct``, ``F(2x2)`` or ``F(4x4)``."""
    return "direct" if tile == winograd.DIRECT else f"F({tile}x{tile})"


@dataclass(frozen=True)
class LayerChoice:
    """One layer shape (:func:`~mlc_jupyter.compilation.winograd.layer_key`), the build's way
    and each way's seconds a call alone (``None`` where it could not be timed)."""

    key: str
    build: int
    seconds: dict[int, float | None] = field(default_factory=dict)

    @property
    def tile(self) -> int:
        """The way the tuning takes: the fastest, where it is clearly faster than the build's."""
        timed = {t: s for t, s in self.seconds.items() if s is not None}
        if not timed:
            return self.build
        fastest = min(timed, key=timed.__getitem__)
        return fastest if clearly_faster(timed[fastest], timed.get(self.build)) else self.build

    def note(self) -> str:
        """What the tuning chose for the layer, and why, for the result's notes."""
        times = ", ".join(
            f"{way_name(t)} {s * 1e6:.0f} us" if s is not None else f"{way_name(t)} not timed"
            for t, s in sorted(self.seconds.items())
        )
        verdict = "kept as built" if self.tile == self.build else f"now {way_name(self.tile)}"
        return (
            f"{self.key}: {verdict} (the build's: {way_name(self.build)}; alone, in turns: {times})"
        )


def choose_layers(mod: Any, target: Any, saved: dict[str, Any] | None = None) -> list[LayerChoice]:
    """Each layer of ``mod`` with more than one way, each way timed on ``target`` (``saved``:
    the answers of a run before, as :func:`as_saved` wrote them, taken as they are)."""
    if saved is not None:
        try:
            return [
                LayerChoice(
                    key, int(entry["build"]), {int(t): s for t, s in entry["seconds"].items()}
                )
                for key, entry in saved.items()
            ]
        except (KeyError, TypeError, ValueError, AttributeError):
            pass  # written by another version: timed again
    return [
        _time_layer(key, call, target) for key, call in winograd_candidates(mod, target).items()
    ]


def chosen(choices: list[LayerChoice]) -> dict[str, int]:
    """The layers whose way differs from the build's, and that way."""
    return {c.key: c.tile for c in choices if c.tile != c.build}


def as_saved(choices: list[LayerChoice]) -> dict[str, Any]:
    """``choices`` as :func:`choose_layers` takes them back from a work dir (JSON)."""
    return {
        c.key: {"build": c.build, "seconds": {str(t): s for t, s in c.seconds.items()}}
        for c in choices
    }


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


__all__ = ["LayerChoice", "as_saved", "choose_layers", "chosen", "way_name"]
