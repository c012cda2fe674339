"""Which design space each tuning task searches.

``--space default`` gives matmul-like CPU kernels the BLIS-like space of :mod:`.matmul_space`
(packed operands, register-blocked micro-kernel) and every other kernel MetaSchedule's default
CPU space; ``metaschedule`` and ``matmul`` force one of them; a schedule function (the course's
``ScheduleFn`` workflow) is used for every task. Records of one space are no answer for another,
so each choice has its own key in the work dir's name.
"""

from __future__ import annotations

import hashlib
import inspect
from dataclasses import dataclass, field
from typing import Any

from ..errors import TuneError
from ..tvm_compat import metaschedule

#: What ``--space`` takes besides the name of a schedule function.
SPACE_NAMES = ("default", "metaschedule", "matmul")
#: MetaSchedule's own design space generator for CPUs and GPUs.
METASCHEDULE_SPACE = "post-order-apply"
#: The work-dir key of the matmul space; a new structure of the space gets a new key.
MATMUL_SPACE_KEY = "matmul-blis-1"


@dataclass
class Spaces:
    """The design space of each task, what to call it, and the key of this choice."""

    generators: list[Any] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    key: str = ""


def function_key(func: Any) -> str:
    """A schedule function's name and a hash of its source (an edited function is a new space)."""
    func = getattr(func, "__wrapped__", func)
    name = f"{getattr(func, '__module__', '')}.{getattr(func, '__qualname__', type(func).__name__)}"
    try:
        text = inspect.getsource(func)
    except (OSError, TypeError):
        text = repr(func)
    return f"{name}:{hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()[:12]}"


def _matmul_space(mod: Any, target: Any) -> Any | None:
    """The matmul space for ``mod`` on ``target``, or ``None`` when it does not apply."""
    if str(target.kind.name) != "llvm":
        return None
    from .matmul_space import is_matmul_like, space_generator  # deferred: imports TVM

    return space_generator(mod, target) if is_matmul_like(mod, target) else None


def choose_spaces(mods: list[Any], target: Any, space: Any) -> Spaces:
    """The design space of each task module for ``space`` (a name or a schedule function)."""
    out = Spaces()
    if callable(space) or not isinstance(space, str):
        generator = space
        if not isinstance(space, metaschedule().space_generator.SpaceGenerator):
            generator = metaschedule().space_generator.ScheduleFn(space)
        name = getattr(space, "__name__", type(space).__name__)
        out.generators = [generator] * len(mods)
        out.names = [name] * len(mods)
        out.key = function_key(space)
        return out
    if space not in SPACE_NAMES:
        raise TuneError(
            f"unknown search space {space!r}",
            hint="--space takes default, metaschedule, matmul or the name of a schedule function",
        )
    for mod in mods:
        matmul = None if space == "metaschedule" else _matmul_space(mod, target)
        if space == "matmul" and matmul is None:
            raise TuneError(
                "--space matmul needs a CPU matmul-like kernel: one contraction "
                "C[i, j] += A[i, k] * B[k, j] whose columns are whole vectors",
                hint="use --space default (MetaSchedule's space for other kernels)",
            )
        out.generators.append(matmul if matmul is not None else METASCHEDULE_SPACE)
        out.names.append("matmul" if matmul is not None else "metaschedule")
    out.key = MATMUL_SPACE_KEY if "matmul" in out.names else ""
    return out
