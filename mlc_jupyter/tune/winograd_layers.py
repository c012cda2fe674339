"""Which layers a model's tuning computes with Winograd beyond the build's reach.

A build leaves some 3x3 stride-1 layers direct that Winograd computes faster: more Winograd
kernels cost a cold build compile time it cannot spare (:data:`~mlc_jupyter.compilation.winograd.
TILE_FROM`). A tuning spends minutes, so it asks each such layer (one question per layer shape,
:func:`~mlc_jupyter.compilation.default_schedule.winograd_candidates`): the convolution alone,
as the build computes it and as Winograd, each with its default schedule, timed in turns on
the same input (:func:`.timing.compare_in_turns`). Winograd is chosen where it is clearly faster
(:func:`.timing.clearly_faster`); the layers chosen are then the tuning's plan (their Winograd
kernels are its tasks, and the tuned model is built with them), and the whole tuned model is
still timed against the default build at the end, which is kept when it is faster.

The answers are kept with the plan in the model's work dir, so a run that resumes makes the
same plan.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..compilation.default_schedule import prepare_model, winograd_candidates
from ..tvm_compat import one_call_module, prim_func_type
from .timing import clearly_faster, compare_in_turns, kernel_module


@dataclass(frozen=True)
class LayerChoice:
    """One layer shape (:func:`~mlc_jupyter.compilation.winograd.layer_key`), its direct and
    its Winograd convolution's seconds a call (``None`` when one could not be timed)."""

    key: str
    direct_s: float | None
    winograd_s: float | None

    @property
    def winograd(self) -> bool:
        """Whether the layer is computed with Winograd: clearly faster, both timed."""
        return clearly_faster(self.winograd_s, self.direct_s)

    def note(self) -> str:
        """What the tuning chose for the layer, and why, for the result's notes."""
        if self.direct_s is None or self.winograd_s is None:
            return f"{self.key}: kept direct (it could not be timed both ways)"
        speedup = self.direct_s / self.winograd_s
        verdict = "computed with Winograd" if self.winograd else "kept direct"
        return (
            f"{self.key}: {verdict} (the build computes it directly; alone, Winograd ran "
            f"{speedup:.2f}x the direct convolution, timed in turns)"
        )


def choose_layers(mod: Any, target: Any, saved: dict[str, Any] | None = None) -> list[LayerChoice]:
    """Each layer of ``mod`` the build leaves direct and Winograd may compute, timed both ways
    on ``target`` (``saved``: the answers of a run before, ``{key: [direct_s, winograd_s]}``,
    taken as they are)."""
    if saved is not None:
        return [LayerChoice(key, *times) for key, times in saved.items()]
    return [
        _time_layer(key, call, target) for key, call in winograd_candidates(mod, target).items()
    ]


def chosen(choices: list[LayerChoice]) -> frozenset[str]:
    """The keys of the layers computed with Winograd."""
    return frozenset(c.key for c in choices if c.winograd)


def as_saved(choices: list[LayerChoice]) -> dict[str, list[float | None]]:
    """``choices`` as :func:`choose_layers` takes them back from a work dir."""
    return {c.key: [c.direct_s, c.winograd_s] for c in choices}


def _time_layer(key: str, call: Any, target: Any) -> LayerChoice:
    alone = one_call_module(call)
    direct = _kernel(prepare_model(alone, target).mod)
    winograd = _kernel(prepare_model(alone, target, winograd_layers=frozenset({key})).mod)
    if direct is None or winograd is None:
        return LayerChoice(key, None, None)
    direct_s, winograd_s = compare_in_turns(kernel_module(direct), kernel_module(winograd), target)
    return LayerChoice(key, direct_s, winograd_s)


def _kernel(mod: Any) -> Any | None:
    """The one kernel of a prepared one-convolution module (``None`` when it made more)."""
    kernels = [f for _, f in mod.functions_items() if isinstance(f, prim_func_type())]
    return kernels[0] if len(kernels) == 1 else None


__all__ = ["LayerChoice", "as_saved", "choose_layers", "chosen"]
