"""Sampling decisions: what each sampling instruction allows, and checks of an edited decision.

TVM does not refuse a wrong decision: a tile whose product misses the loop extent or a compute
location that is not legal is silently replaced while replaying. So every edit is checked here
first and a wrong one is refused with the reason.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from ..errors import TraceError

TILE_KINDS = ("SamplePerfectTile", "SamplePartitionedTile")
CATEGORICAL = "SampleCategorical"
COMPUTE_LOCATION = "SampleComputeLocation"


@dataclass(frozen=True)
class DecisionInfo:
    """What a user may put in one sampling instruction's decision.

    ``kind`` is ``"tile"``, ``"categorical"``, ``"compute_location"`` or ``"other"``; ``extent``
    the loop extent a tile must multiply to (``None`` when not constant); ``choices`` the legal
    values with a label each (categorical candidates, compute locations).
    """

    kind: str
    value: Any
    n: int = 0
    extent: int | None = None
    max_innermost: int = 0
    choices: tuple[tuple[Any, str], ...] = field(default=())


def plain(value: Any) -> Any:
    """A decision as plain Python values (``IntImm`` -> ``int``, arrays -> lists)."""
    if isinstance(value, bool | int | float | str) or value is None:
        return value
    if hasattr(value, "value"):
        return value.value
    try:
        return [plain(x) for x in value]
    except TypeError:
        return str(value)


def parse_value(text: Any) -> Any:
    """A decision typed by a user: ``"8, 16"``, ``"[8, 16]"``, ``"2"`` or a Python value."""
    if not isinstance(text, str):
        return plain(text)
    stripped = text.strip()
    if not stripped:
        raise TraceError("the decision is empty")
    if not stripped.startswith("[") and "," in stripped:
        stripped = f"[{stripped}]"
    try:
        return json.loads(stripped)
    except json.JSONDecodeError:
        raise TraceError(f"cannot read {text!r} as a decision (write e.g. [8, 16] or 2)") from None


def _ints(value: Any, what: str) -> list[int]:
    if not isinstance(value, list) or not all(
        isinstance(x, int) and not isinstance(x, bool) for x in value
    ):
        raise TraceError(f"{what} must be a list of whole numbers, got {value!r}")
    return value


def check(info: DecisionInfo, value: Any) -> Any:
    """``value`` made valid for ``info``, or :class:`TraceError` saying what is wrong."""
    if info.kind == "tile":
        factors = _ints(value, "tile factors")
        if len(factors) != info.n:
            raise TraceError(
                f"the tile needs {info.n} factors, got {len(factors)}: {factors}",
                hint=f"give {info.n} numbers whose product is {info.extent}",
            )
        if any(f < 1 for f in factors):
            raise TraceError(f"tile factors must be at least 1, got {factors}")
        if info.extent is not None and math.prod(factors) != info.extent:
            raise TraceError(
                f"the product of {factors} is {math.prod(factors)}, "
                f"but the loop extent is {info.extent}",
                hint=f"choose factors that multiply to {info.extent}",
            )
        if info.max_innermost > 0 and factors[-1] > info.max_innermost:
            raise TraceError(
                f"the innermost factor {factors[-1]} exceeds max_innermost_factor="
                f"{info.max_innermost} of this instruction"
            )
        return factors
    if info.kind in ("categorical", "compute_location"):
        if isinstance(value, list) and len(value) == 1:
            value = value[0]
        legal = [choice for choice, _ in info.choices]
        if value not in legal or isinstance(value, bool):
            labels = ", ".join(f"{c} ({label})" for c, label in info.choices)
            raise TraceError(f"{value!r} is not one of the legal choices: {labels}")
        return value
    return value


def categorical_choices(attrs: Any) -> tuple[tuple[int, str], ...]:
    """``(index, "candidate (p=0.25)")`` for each candidate of a ``sample_categorical``."""
    candidates = plain(attrs[0])
    probs = plain(attrs[1]) if len(attrs) > 1 else [None] * len(candidates)
    out = []
    for index, (cand, prob) in enumerate(zip(candidates, probs, strict=False)):
        label = f"{cand}" + (f" (p={prob:.2g})" if isinstance(prob, float) else "")
        out.append((index, label))
    return tuple(out)
