"""Helpers of timing: settling foreign threads, FLOPs, timings from samples, inputs, builds."""

from __future__ import annotations

import inspect
import statistics
import time
from dataclasses import dataclass
from typing import Any

from ..compilation import build_module, wait_for_saved_builds
from ..compilation.cached_build import Built
from ..compilation.model_costs import calls_externs, kernel_calls, main_bytes
from ..tvm_compat import estimate_tir_flops, ir_module_type, param_buffers, prim_func_type, tvm
from .inputs import random_inputs

DEFAULT_MIN_REPEAT_MS = 50.0


@dataclass(frozen=True)
class Timing:
    """One timed variant: seconds per call (median, mean, std, min over ``runs`` repeats).

    ``number`` is the calls per run (0: calibrated by ``min_repeat_ms``); ``correct`` is ``None``
    without a reference; a mismatch or failure sets ``error`` and leaves the times ``None``;
    ``kind`` is ``tvm``, ``numpy``, ``torch``, ``onnxruntime`` or ``openvino``; ``speedup`` is against the first variant;
    ``bytes`` is what the arguments hold (the least traffic of a call).
    """

    name: str
    median_s: float | None
    mean_s: float | None
    std_s: float | None
    min_s: float | None
    runs: int
    number: int = 0
    gflops: float | None = None
    flops: float | None = None
    correct: bool | None = None
    error: str | None = None
    speedup: float | None = None
    kind: str = "tvm"
    target: str = ""
    results_s: tuple[float, ...] = ()
    bytes: float | None = None
    #: where the row ran: ``cpu``, ``cuda:0``, or an RPC server's device
    device: str = ""
    #: the FLOPs its kernels compute, where fewer than ``flops`` (the work as written): a
    #: Winograd convolution's; its rate on them is what the machine's peak bounds
    arithmetic_flops: float | None = None

    @property
    def arithmetic_gflops(self) -> float | None:
        """GFLOP/s of the arithmetic it does (``gflops`` unless it does less than written)."""
        if self.arithmetic_flops and self.median_s:
            return self.arithmetic_flops / self.median_s / 1e9
        return self.gflops

    @property
    def intensity(self) -> float | None:
        """FLOPs per byte of the arguments: where the kernel sits on the roofline."""
        return self.flops / self.bytes if self.flops and self.bytes else None

    @property
    def spread(self) -> float | None:
        """Standard deviation over median of the repeats; large values mean a noisy measurement."""
        if not self.results_s or not self.median_s or self.std_s is None:
            return None
        return self.std_s / self.median_s


@dataclass(frozen=True)
class Sampling:
    """How a latency is sampled: ``repeat`` samples of at least ``min_repeat_ms`` each.

    ``number`` fixes the calls per sample; ``None`` calibrates it once, before the samples.
    """

    repeat: int = 5
    min_repeat_ms: float = DEFAULT_MIN_REPEAT_MS
    number: int | None = None


#: The sampling ``%mlc_time`` uses unless told otherwise.
DEFAULT_SAMPLING = Sampling()


NOISY_SPREAD = 0.25
#: NumPy's OpenBLAS threads (and PyTorch's OpenMP threads) keep spinning for a few tenths of a
#: second after a call; a kernel timed meanwhile shares its cores with them (the figures are in
#: docs/DEVELOPING.md, "Measured while building the tuner").
SETTLE_S = 0.5


def let_threads_settle(after: Any = "numpy") -> None:
    """Wait until other libraries' worker threads stop spinning, before timing something.

    ``after`` is what just ran: a NumPy/PyTorch expression or a Python function makes it wait;
    a TVM module or plain arrays (no foreign threads) do not.
    """
    if isinstance(after, str) or inspect.isroutine(after):
        time.sleep(SETTLE_S)


def estimate_flops(mod: Any, name: str) -> float | None:
    """TVM's TIR FLOP estimate for function ``name`` (``None`` when it cannot tell)."""
    try:
        func = mod[name]
        if not isinstance(func, prim_func_type()):
            return None
        flops = estimate_tir_flops(ir_module_type()({name: func}))
    except Exception:  # noqa: BLE001 - the estimator refuses some functions
        return None
    return flops or None


def model_flops(mod: Any, as_written: bool = True) -> float | None:
    """FLOPs of one call of a Relax module's ``main`` as written: each kernel's estimate times
    its calls, a Winograd kernel counted as the direct convolution it computes
    (:func:`~mlc_jupyter.compilation.winograd.flops_as_written`), so that two builds of one model
    that compute a layer in different ways, and the runtimes raced beside them, are rated on the
    same work (kernels TVM cannot estimate, copies and reshapes, count none); ``None`` when
    ``main`` also calls functions outside the module (their work cannot be counted).
    ``as_written=False`` counts the arithmetic the kernels do instead."""
    from ..compilation.winograd import flops_as_written  # deferred: imports TVM at import

    try:
        if calls_externs(mod):
            return None
        calls = kernel_calls(mod)
    except Exception:  # noqa: BLE001 - not a Relax module with kernels: unknown
        return None
    total = sum(
        ((as_written and flops_as_written(mod[k])) or estimate_flops(mod, k) or 0.0) * n
        for k, n in calls.items()
    )
    return total or None


def model_bytes(mod: Any) -> float | None:
    """Bytes a Relax module's ``main`` touches at least (weights, inputs, outputs)."""
    try:
        size = main_bytes(mod["main"])
    except Exception:  # noqa: BLE001 - no main, or a symbolic shape: unknown
        return None
    return float(size) if size else None


def argument_bytes(mod: Any, name: str = "main") -> float | None:
    """Bytes the arguments of TensorIR function ``name`` hold: the least memory traffic of a call,
    which over its FLOPs gives the kernel's arithmetic intensity (``None`` when unknown)."""
    try:
        func = mod[name] if not isinstance(mod, prim_func_type()) else mod
        if not isinstance(func, prim_func_type()):
            return None
        total = 0
        for buffer in param_buffers(func):
            count = 1
            for extent in buffer.shape:
                count *= int(extent)
            total += count * tvm().DataType(str(buffer.dtype)).bits // 8
    except Exception:  # noqa: BLE001 - a symbolic shape, a handle: unknown
        return None
    return float(total) or None


def argument_dtypes(mod: Any) -> list[str]:
    """The dtypes of every argument of every TensorIR function in ``mod``."""
    funcs = [mod] if isinstance(mod, prim_func_type()) else [f for _, f in mod.functions_items()]
    return [
        str(buffer.dtype)
        for func in funcs
        if isinstance(func, prim_func_type())
        for buffer in param_buffers(func)
    ]


def timing_from_samples(
    name: str, results: list[float], number: int, flops: float | None, **kw: Any
) -> Timing:
    """A :class:`Timing` of ``results`` (seconds per call, one per sample)."""
    median = statistics.median(results)
    return Timing(
        name=name,
        median_s=median,
        mean_s=statistics.fmean(results),
        std_s=statistics.pstdev(results) if len(results) > 1 else 0.0,
        min_s=min(results),
        runs=len(results),
        number=number,
        flops=flops,
        gflops=flops / median / 1e9 if flops and median else None,
        results_s=tuple(results),
        **kw,
    )


def as_built(obj: Any, target: Any) -> Built:
    """``obj`` as a build: a build, a function of one (``lib.mm``), or a module built now."""
    obj = getattr(obj, "built", obj)
    if isinstance(obj, Built):
        return obj
    built = build_module(obj, target)
    wait_for_saved_builds()  # the background link of a new build would share the cores
    return built


def function_name_of(obj: Any, func_name: str | None) -> str | None:
    """The function a variant names: ``lib.mm_relu`` names ``mm_relu``."""
    return getattr(obj, "func_name", None) or func_name


def model_inputs(built: Built, sig: Any, args: Any, seed: int) -> list[Any]:
    """The inputs to time on: ``args``, else an imported model's example, else random ones."""
    if args is not None:
        return list(args)
    if built.origin is not None and built.origin.example_args:
        return list(built.origin.example_args)
    return random_inputs(sig, seed)
