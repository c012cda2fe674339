"""Which design space each tuning task searches.

``--space default`` gives matmul-like CPU kernels the BLIS-like space of :mod:`.matmul`
(packed operands, register-blocked micro-kernel), NHWC convolutions, pooling and means on CPUs
the convolution space of :mod:`.conv` (direct, or Winograd for the kernels a build made so), CUDA kernels on fp16 data MetaSchedule's
tensor-core space (its wmma/mma tiling rules and postprocessors, which it picks by itself only
for ``sm_80`` and newer), other CUDA kernels MetaSchedule's CUDA rules without the tensor-core
ones (the same space for them, without the seconds of registering tensor intrinsics before the
first candidate) and every other kernel MetaSchedule's default space; ``metaschedule``, ``matmul`` and ``conv`` force one of them; a schedule function (the course's
``ScheduleFn`` workflow) is used for every task. Records of one space are no answer for another,
so each choice has its own key in the work dir's name.
"""

from __future__ import annotations

import hashlib
import inspect
import re
from dataclasses import dataclass, field
from typing import Any

from ...compilation import is_cpu, is_cuda
from ...compilation.intrinsics import load_tensor_intrinsics
from ...errors import TuneError
from ...measure.timer import argument_dtypes
from ...tvm_compat import metaschedule

#: What ``--space`` takes besides the name of a schedule function.
SPACE_NAMES = ("default", "metaschedule", "matmul", "conv")
#: MetaSchedule's own design space generator for CPUs and GPUs.
METASCHEDULE_SPACE = "post-order-apply"
#: The work-dir key of the matmul space; a new structure of the space gets a new key.
MATMUL_SPACE_KEY = "matmul-blis-2"
#: The work-dir key of the direct-convolution space.
CONV_SPACE_KEY = "conv-direct-2"
#: The work-dir key of the convolution space's Winograd kernels.
WINOGRAD_SPACE_KEY = "conv-winograd-3"
#: The work-dir key of MetaSchedule's tensor-core space.
TENSOR_CORE_SPACE_KEY = "cuda-tensorcore-1"
#: MetaSchedule's name of its CUDA tensor-core rules, postprocessors and mutators.
TENSOR_CORE_RULES = "cuda-tensorcore"
#: MetaSchedule's name of its CUDA rules, postprocessors and mutators without tensor cores.
CUDA_RULES = "cuda"
#: The first CUDA architecture with tensor cores (wmma).
TENSOR_CORE_MIN_SM = 70
#: Data that MetaSchedule's tensor-core rules tile onto tensor cores.
TENSOR_CORE_DTYPES = frozenset({"float16"})


@dataclass
class Spaces:
    """The design space of each task, what to call it, and the key of this choice."""

    generators: list[Any] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    key: str = ""
    #: whether a space may use tensor intrinsics (they must be registered before the search)
    tensor_intrinsics: bool = True


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
    if not is_cpu(target):
        return None
    from .matmul import is_matmul_like, space_generator  # deferred: imports TVM

    return space_generator(mod, target) if is_matmul_like(mod, target) else None


def _conv_space(mod: Any, target: Any) -> tuple[Any, str] | None:
    """The convolution space for ``mod`` on ``target`` and its name (``conv``: a direct
    convolution; ``conv-winograd``: a Winograd kernel), or ``None`` when it does not apply."""
    if not is_cpu(target):
        return None
    from .conv import (  # deferred: imports TVM
        is_window_like,
        is_winograd_kernel,
        space_generator,
        winograd_space_generator,
    )

    if is_winograd_kernel(mod, target):
        return winograd_space_generator(mod, target), "conv-winograd"
    return (space_generator(mod, target), "conv") if is_window_like(mod, target) else None


def _sm(target: Any) -> int | None:
    """``sm_90a`` -> 90; ``None`` when the target names no architecture."""
    digits = re.match(r"sm_(\d+)", str(target.attrs.get("arch", "")))
    return int(digits.group(1)) if digits else None


def uses_tensor_cores(mod: Any, target: Any) -> bool:
    """Whether ``mod`` is searched in MetaSchedule's tensor-core space on ``target``: a CUDA
    GPU with tensor cores (``sm_70`` or newer, or no architecture named) and fp16 data."""
    if not is_cuda(target):
        return False
    sm = _sm(target)
    if sm is not None and sm < TENSOR_CORE_MIN_SM:
        return False
    return any(dtype in TENSOR_CORE_DTYPES for dtype in argument_dtypes(mod))


def cuda_space(tensor_cores: bool) -> Any:
    """MetaSchedule's design space with its CUDA rules, postprocessors and mutators, with or
    without the tensor-core ones."""
    rules = TENSOR_CORE_RULES if tensor_cores else CUDA_RULES
    load_tensor_intrinsics("cuda", tensor_cores)  # the rules name the intrinsics they tile onto
    return metaschedule().space_generator.PostOrderApply(
        sch_rules=rules, postprocs=rules, mutator_probs=rules
    )


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
            hint="--space takes default, metaschedule, matmul, conv or the name of a schedule "
            "function",
        )
    simt = 0  # tasks in the CUDA space without tensor cores
    for mod in mods:
        matmul = _matmul_space(mod, target) if space in ("default", "matmul") else None
        conv = _conv_space(mod, target) if space in ("default", "conv") and not matmul else None
        if space == "conv" and conv is None:
            raise TuneError(
                "--space conv needs a CPU kernel whose one reduction writes an NHWC tensor "
                "(a convolution, pooling or mean, as a model build makes them) or a Winograd "
                "convolution",
                hint="use --space default (MetaSchedule's space for other kernels)",
            )
        if space == "matmul" and matmul is None:
            raise TuneError(
                "--space matmul needs a CPU matmul-like kernel: one contraction "
                "C[i, j] += A[i, k] * B[k, j] whose columns are whole vectors",
                hint="use --space default (MetaSchedule's space for other kernels)",
            )
        if matmul is not None:
            out.generators.append(matmul)
            out.names.append("matmul")
        elif conv is not None:
            out.generators.append(conv[0])
            out.names.append(conv[1])
        elif space == "default" and is_cuda(target):
            tensor_cores = uses_tensor_cores(mod, target)
            out.generators.append(cuda_space(tensor_cores))
            out.names.append("tensor-core" if tensor_cores else "metaschedule")
            simt += int(not tensor_cores)
        else:
            out.generators.append(METASCHEDULE_SPACE)
            out.names.append("metaschedule")
    out.tensor_intrinsics = simt < len(mods)
    keys = {
        "matmul": MATMUL_SPACE_KEY,
        "conv": CONV_SPACE_KEY,
        "conv-winograd": WINOGRAD_SPACE_KEY,
        "tensor-core": TENSOR_CORE_SPACE_KEY,
    }
    out.key = "+".join(keys[name] for name in keys if name in out.names)
    return out
