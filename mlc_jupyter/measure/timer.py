"""Time built functions with TVM's ``time_evaluator`` after checking their outputs."""

from __future__ import annotations

import inspect
import statistics
import time
from typing import Any

from ..compilation import build_module, describe_target, device_for, wait_for_saved_builds
from ..compilation.call import (
    compiled_symbol,
    prepare,
    relax_vm,
    require_device_here,
    runtime_function,
    to_device,
)
from ..errors import MLCError, TimingError, error_reason
from ..results import Built, Timing
from ..tvm_compat import IRModule, PrimFunc, estimate_tir_flops, param_buffers, tvm
from .inputs import random_inputs
from .reference import compare, reference_outputs

DEFAULT_MIN_REPEAT_MS = 50.0
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
        if not isinstance(func, PrimFunc()):
            return None
        flops = estimate_tir_flops(IRModule()({name: func}))
    except Exception:  # noqa: BLE001 - the estimator refuses some functions
        return None
    return flops or None


def argument_bytes(mod: Any, name: str = "main") -> float | None:
    """Bytes the arguments of TensorIR function ``name`` hold: the least memory traffic of a call,
    which over its FLOPs gives the kernel's arithmetic intensity (``None`` when unknown)."""
    try:
        func = mod[name] if not isinstance(mod, PrimFunc()) else mod
        if not isinstance(func, PrimFunc()):
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
    funcs = [mod] if isinstance(mod, PrimFunc()) else [f for _, f in mod.functions_items()]
    return [
        str(buffer.dtype)
        for func in funcs
        if isinstance(func, PrimFunc())
        for buffer in param_buffers(func)
    ]


def _timing(name: str, results: list[float], number: int, flops: float | None, **kw: Any) -> Timing:
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


def time_module(
    mod_or_built: Any,
    target: Any = None,
    *,
    func_name: str | None = None,
    args: Any = None,
    ref: Any = None,
    seed: int = 0,
    number: int | None = None,
    repeat: int = 5,
    min_repeat_ms: float = DEFAULT_MIN_REPEAT_MS,
    name: str | None = None,
    namespace: dict[str, Any] | None = None,
    expected: list[Any] | None = None,
    remote: Any = None,
) -> Timing:
    """Build (cached), check against ``ref`` and time one function with ``time_evaluator``.

    ``ref`` is a NumPy expression over the parameter names, a callable, a module or arrays;
    a mismatch gives a ``Timing`` with ``correct=False`` and ``error`` set instead of a time.
    ``remote`` (a :class:`~mlc_jupyter.compilation.remote.RemoteModules`) runs and times the
    function on an RPC server's device instead of this machine's.
    """
    if remote is None and not isinstance(getattr(mod_or_built, "built", mod_or_built), Built):
        require_device_here(target, "the module to time is for")  # before building it
    built = as_built(mod_or_built, target)
    sig, run = _placed(built, function_name_of(mod_or_built, func_name), remote)
    label = name or sig.name
    tname = describe_target(built.target) + (f" on {remote.spec}" if remote is not None else "")
    inputs = list(args) if args is not None else random_inputs(sig, seed)
    tensors, outputs = run(inputs)
    inputs = inputs[: len(sig.inputs)]
    if expected is None:
        expected = reference_outputs(ref, inputs, sig, built.target, namespace)
        let_threads_settle(after=ref)
    correct = None
    if expected is not None:
        names = [p.name for p in sig.outputs] or ["result"]
        problem = compare(outputs, expected, names)
        if problem:
            return Timing(
                label, None, None, None, None, 0, correct=False, error=problem, target=tname
            )
        correct = True
    dev = remote.device(built.target) if remote is not None else device_for(built.target)
    module = remote.load(built) if remote is not None else built.executable.mod
    try:
        if sig.relax:
            module = relax_vm(built, remote)
        symbol = sig.name if sig.relax else compiled_symbol(built.mod, sig.name)
        timer = module.time_evaluator(
            symbol, dev, number=number or 1, repeat=repeat, min_repeat_ms=int(min_repeat_ms)
        )
        measured = timer(*tensors)
    except MLCError:
        raise
    except Exception as err:  # noqa: BLE001
        raise TimingError(f"timing {sig.name} failed: {error_reason(err)}") from None
    results = [float(x) for x in measured.results]
    return _timing(
        label,
        results,
        number or 0,
        estimate_flops(built.mod, sig.name),
        correct=correct,
        target=tname,
        bytes=argument_bytes(built.mod, sig.name),
    )


def _placed(built: Built, func_name: str | None, remote: Any) -> tuple[Any, Any]:
    """The signature of the function to time and a ``run(inputs)`` that calls it once where it
    is timed (here or on ``remote``) and returns its argument tensors and NumPy outputs."""
    sig = prepare(built, func_name, local=remote is None)
    device = remote.device(built.target) if remote is not None else None
    func = runtime_function(built, sig.name, remote)

    def run(inputs: list[Any]) -> tuple[list[Any], list[Any]]:
        tensors, allocated = to_device(built, sig, tuple(inputs), device)
        result = func(*tensors)
        n_out = allocated or sig.n_outputs
        outputs = [result] if sig.relax else tensors[len(tensors) - n_out :]
        return tensors, [o.numpy() if hasattr(o, "numpy") else o for o in outputs]

    return sig, run


def outputs_on(built: Built, func_name: str | None, inputs: list[Any], remote: Any) -> list[Any]:
    """The NumPy outputs of one call of ``built``'s function (here or on ``remote``)."""
    return _placed(built, func_name, remote)[1](inputs)[1]


def time_callable(
    name: str,
    fn: Any,
    inputs: list[Any],
    *,
    repeat: int = 5,
    min_repeat_ms: float = DEFAULT_MIN_REPEAT_MS,
    flops: float | None = None,
    kind: str = "python",
) -> Timing:
    """Time a Python callable the way ``time_evaluator`` does: calibrated loops, ``repeat`` runs."""
    fn(*inputs)
    number, elapsed = 1, 0.0
    while True:
        start = time.perf_counter()
        for _ in range(number):
            fn(*inputs)
        elapsed = time.perf_counter() - start
        if elapsed * 1e3 >= min_repeat_ms or number >= 1 << 20:
            break
        number *= 2 if elapsed <= 0 else max(2, min(10, int(min_repeat_ms / 1e3 / elapsed) + 1))
    results = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn(*inputs)
        results.append((time.perf_counter() - start) / number)
    return _timing(name, results, number, flops, kind=kind, correct=True)
