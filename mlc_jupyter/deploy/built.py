"""The model build behind what a user hands over: a build, or a tuned model built on demand."""

from __future__ import annotations

import dataclasses
from typing import Any

from ..compilation import build_module
from ..compilation.cached_build import Built
from ..errors import DeployError
from ..results import ImportedModel
from ..tune.report import TuneResult
from ..tvm_compat import is_tvm_object


def model_build(obj: Any, name: str = "the model") -> Built:
    """The Relax build ``obj`` stands for: a :class:`Built` as it is, a whole-model
    :class:`TuneResult` built (a cache hit after ``%mlc_tune``, which built it to time it).

    Raises :class:`DeployError` for a model that is not built yet and for kernel builds.
    """
    if isinstance(obj, TuneResult) and obj.kind == "model":
        built = build_module(obj.mod, obj.target)
        return dataclasses.replace(built, origin=obj.origin or built.origin)
    if isinstance(obj, Built):
        if not obj.relax:
            raise DeployError(
                f"{name} is a TensorIR kernel build; this takes a model (a Relax build)",
                hint="call the kernel build directly, e.g. mm_lib(A, B)",
            )
        return obj
    if isinstance(obj, ImportedModel) or is_tvm_object(obj):
        raise DeployError(
            f"{name} is not built",
            hint=f"%mlc_build {name} first, then use {name}_lib (or a %mlc_tune result)",
        )
    raise DeployError(
        f"{name} is a {type(obj).__name__}, not a model build",
        hint="give what %mlc_build or %mlc_tune bound for an imported model",
    )


def model_inputs(built: Built, sig: Any) -> int:
    """How many of ``main``'s parameters are the model's inputs (the rest are its weights, for a
    model imported with ``--params inputs``)."""
    origin = built.origin
    if origin is None or getattr(origin, "params", "bound") != "inputs":
        return len(sig.params)
    return len(origin.summary.inputs)
