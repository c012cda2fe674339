"""Timing races: TVM builds, PyTorch models (eager, ``torch.compile``) and expressions in turns.

Every contender runs once on the shared inputs (its outputs are checked against the reference),
is calibrated (calls per sample so that one sample lasts ``min_repeat_ms``), then all of them are
sampled in turns (:mod:`.turns`). Between samples of different libraries the race waits for
worker threads to stop spinning (:data:`~.timer.SETTLE_S`).
"""

from __future__ import annotations

import copy
import math
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..compilation import describe_target, device_for, device_kind, is_gpu_target
from ..compilation.cached_build import Built
from ..compilation.call import (
    compiled_symbol,
    prepare,
    relax_vm,
    require_device_here,
    runtime_function,
    to_device,
    written_indices,
)
from ..compilation.isolate import IsolatedCall
from ..errors import MLCError, RemoteError
from .reference import as_arrays, compare, reference_outputs, torch_inputs
from .timer import (
    DEFAULT_SAMPLING,
    SETTLE_S,
    Sampling,
    Timing,
    argument_bytes,
    as_built,
    estimate_flops,
    function_name_of,
    let_threads_settle,
    model_bytes,
    model_flops,
    model_inputs,
    timing_from_samples,
)
from .turns import Sampler, samples_in_turns

#: Most calls one sample makes (a kernel of a few nanoseconds would otherwise loop for ever).
MAX_NUMBER = 1 << 20


@dataclass
class Contender:
    """One row of a race: how to get its outputs once, and how to calibrate a sampler.

    ``calibrate`` takes the least seconds per sample and returns the sampler and the calls per
    sample; ``error`` set means the contender could not run (the row says why).
    """

    name: str
    kind: str
    outputs: Callable[[], list[Any]] | None = None
    calibrate: Callable[[float], tuple[Sampler, int]] | None = None
    flops: float | None = None
    bytes: float | None = None
    target: str = ""
    error: str | None = None
    notes: list[str] = field(default_factory=list)
    device: str = "cpu"
    #: the FLOPs its kernels compute, where fewer than ``flops`` (:attr:`Timing.arithmetic_flops`)
    arithmetic_flops: float | None = None


def tvm_contender(
    built: Built,
    func_name: str | None,
    inputs: list[Any],
    name: str,
    number: int | None = None,
    remote: Any = None,
) -> Contender:
    """A TVM build's function on ``inputs`` (outputs allocated when only inputs are given).

    ``remote`` (a :class:`~mlc_jupyter.compilation.remote.RemoteModules`) runs and times it on
    an RPC server's device instead of this machine's.
    """
    sig = prepare(built, func_name, local=remote is None)
    if built.isolated and remote is None:
        return isolated_contender(built, sig, inputs, name, number)
    device = remote.device(built.target) if remote is not None else device_for(built.target)
    tensors, allocated = to_device(built, sig, tuple(inputs), device if remote else None)
    n_out = allocated or sig.n_outputs
    # with a scalar last (``scale(A, B, n)``) no output is trailing: the buffers it writes are
    written = [tensors[i] for i in written_indices(sig)] if not (n_out or sig.relax) else []
    func = runtime_function(built, sig.name, remote)
    if sig.relax:
        module = relax_vm(built, remote)
    else:
        module = remote.load(built) if remote is not None else built.executable.mod
    where = f" on {remote.spec}" if remote is not None else ""
    symbol = sig.name if sig.relax else compiled_symbol(built.mod, sig.name)

    def outputs() -> list[Any]:
        result = func(*tensors)
        return as_arrays(result if sig.relax else written or tensors[len(tensors) - n_out :])

    def calibrate(min_s: float) -> tuple[Sampler, int]:
        if remote is not None and not number:  # a call from here is a round trip: let the
            # server's evaluator find how many calls fill a sample
            timer = module.time_evaluator(symbol, device, repeat=1, min_repeat_ms=int(min_s * 1e3))
            return (lambda: float(timer(*tensors).mean)), 0
        calls = number or _calls(lambda: (func(*tensors), device.sync()), min_s)
        timer = module.time_evaluator(symbol, device, number=calls, repeat=1)
        return (lambda: float(timer(*tensors).mean)), calls

    flops = model_flops(built.mod) if sig.relax else estimate_flops(built.mod, sig.name)
    arithmetic = model_flops(built.mod, as_written=False) if sig.relax else flops
    return Contender(
        name,
        "tvm",
        outputs,
        calibrate,
        flops=flops,
        bytes=model_bytes(built.mod) if sig.relax else argument_bytes(built.mod, sig.name),
        target=describe_target(built.target) + where,
        device=f"{device_name(built.target)}{where}",
        arithmetic_flops=arithmetic if flops and arithmetic and arithmetic < flops else None,
    )


def isolated_contender(
    built: Built, sig: Any, inputs: list[Any], name: str, number: int | None = None
) -> Contender:
    """An isolated build's function, run and timed in its worker process (TVM's evaluator
    there, on arguments copied into shared memory once), so a crash fails the row's cell, not
    the notebook; the report says where it was timed."""
    isolated = IsolatedCall(built, sig, tuple(inputs))
    isolated.worker.start()  # its pid names it in the report

    def outputs() -> list[Any]:
        isolated.run()
        return isolated.outputs()

    def calibrate(min_s: float) -> tuple[Sampler, int]:
        calls = number or isolated.calibrate(min_s)
        return (lambda: isolated.sample(calls)), calls

    where = f"isolated worker (pid {isolated.worker.pid})"
    return Contender(
        name,
        "tvm",
        outputs,
        calibrate,
        flops=estimate_flops(built.mod, sig.name),
        bytes=argument_bytes(built.mod, sig.name),
        target=describe_target(built.target),
        device=f"{device_name(built.target)}, {where}",
        notes=[f"{name}: timed in its {where}, by TVM's time_evaluator there"],
    )


def device_name(target: Any) -> str:
    """``cpu`` or ``cuda:0``: the device a build for ``target`` runs on here (as PyTorch says)."""
    kind = device_kind(target)
    return "cpu" if kind == "cpu" else f"{kind}:{device_for(target).index}"


@dataclass(frozen=True)
class TorchPlacement:
    """Where a race's PyTorch rows run: the TVM variants' device, or why they cannot.

    ``device`` is a PyTorch device (``cpu``, ``cuda:0``); ``None`` means the rows are left out
    and ``reason`` says why (racing a GPU kernel against PyTorch on the CPU compares machines,
    not code).
    """

    device: str | None
    reason: str = ""


def torch_placement(target: Any) -> TorchPlacement:
    """Where PyTorch rows must run to race a build for ``target`` (``None``: the CPU)."""
    if target is None or not is_gpu_target(target):
        return TorchPlacement("cpu")
    name = device_name(target)
    if not name.startswith("cuda"):
        return TorchPlacement(None, f"PyTorch rows left out: PyTorch cannot run on {name}")
    import torch  # deferred: optional, and slow to import

    if not torch.cuda.is_available():
        why = (
            "this PyTorch is built without CUDA"
            if torch.version.cuda is None
            else "PyTorch sees no CUDA GPU"
        )
        return TorchPlacement(
            None,
            f"PyTorch rows left out: the TVM variant runs on the GPU ({name}) and {why} "
            f"(torch {torch.__version__}); on the CPU they would race another machine",
        )
    return TorchPlacement(name)


def outputs_on(built: Built, func_name: str | None, inputs: list[Any], remote: Any) -> list[Any]:
    """The NumPy outputs of one call of ``built``'s function (here or on ``remote``)."""
    return tvm_contender(built, func_name, inputs, "", remote=remote).outputs()


def _calls(call: Callable[[], Any], min_s: float) -> int:
    """Calls per sample so that one sample lasts about ``min_s`` (after a warm-up call)."""
    call()
    start = time.perf_counter()
    call()
    once = max(time.perf_counter() - start, 1e-9)
    return max(1, min(MAX_NUMBER, math.ceil(min_s / once)))


def callable_contender(
    name: str,
    fn: Callable[..., Any],
    args: list[Any],
    kind: str,
    flops: float | None = None,
    device: str = "cpu",
) -> Contender:
    """A Python function (NumPy, PyTorch) on ``args``, timed with ``perf_counter`` loops, or
    with CUDA events around the loop when ``device`` is a GPU (PyTorch returns before its
    kernels finish; the events time the kernels, as ``torch.utils.benchmark`` does)."""

    def outputs() -> list[Any]:
        return as_arrays(fn(*args))

    def calibrate(min_s: float) -> tuple[Sampler, int]:
        if device.startswith("cuda"):
            return _cuda_sampler(fn, args, min_s)
        calls = _calls(lambda: fn(*args), min_s)

        def sample() -> float:
            start = time.perf_counter()
            for _ in range(calls):
                fn(*args)
            return (time.perf_counter() - start) / calls

        return sample, calls

    return Contender(name, kind, outputs, calibrate, flops=flops, device=device)


def _cuda_sampler(fn: Callable[..., Any], args: list[Any], min_s: float) -> tuple[Sampler, int]:
    """A sampler of ``fn`` on the GPU: CUDA events recorded around ``calls`` calls, then a
    synchronize, so each sample is the kernels' time and not the launches'."""
    import torch  # deferred: optional, and slow to import

    calls = _calls(lambda: (fn(*args), torch.cuda.synchronize()), min_s)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def sample() -> float:
        torch.cuda.synchronize()
        start.record()
        for _ in range(calls):
            fn(*args)
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3 / calls  # milliseconds

    return sample, calls


_COMPILED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
#: Each model's copies on other devices (the user's model stays where it is).
_MOVED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def torch_contenders(
    model: Any,
    inputs: list[Any],
    name: str,
    compiled: bool = True,
    placement: TorchPlacement | None = None,
) -> list[Contender]:
    """``name`` (the model eager) and ``torch.compile(name)``, both without gradients, on the
    device ``placement`` names (the CPU by default; on a GPU a copy of the model and the
    inputs are moved there and each sample is timed with CUDA events).

    The compiled model is kept for the kernel's life, so only the first race pays for
    compiling; a model ``torch.compile`` cannot handle gets a row that says why.
    """
    import torch  # deferred: optional, and slow to import

    placement = placement or TorchPlacement("cpu")
    label = f"torch.compile({name})"
    if placement.device is None:
        rows = [Contender(name, "torch", error=placement.reason, device="")]
        if compiled:
            rows.append(Contender(label, "torch", error=placement.reason, device=""))
        return rows
    device = placement.device
    args = [a.to(device) for a in torch_inputs(model, inputs)]
    if device != "cpu":
        model = _moved(model, device)

    def run(module: Any) -> Callable[..., Any]:
        def call(*xs: Any) -> Any:
            with torch.no_grad():
                return module(*xs)

        return call

    rows = [callable_contender(name, run(model), args, "torch", device=device)]
    if not compiled:
        return rows
    try:
        fast = _COMPILED.get(model)
        if fast is None:
            start = time.perf_counter()
            fast = torch.compile(model)
            run(fast)(*args)  # compiles on the first call
            _COMPILED[model] = fast
            rows[0].notes.append(f"{label}: compiled in {time.perf_counter() - start:.1f} s")
    except Exception as err:  # noqa: BLE001 - say why torch.compile cannot run here
        first = next((ln for ln in str(err).splitlines() if ln.strip()), type(err).__name__)
        rows.append(Contender(label, "torch", error=f"torch.compile failed: {first[:300]}"))
        return rows
    rows.append(callable_contender(label, run(fast), args, "torch", device=device))
    return rows


def _moved(model: Any, device: str) -> Any:
    """A copy of ``model`` on ``device``, made once per model and device."""
    copies = _MOVED.setdefault(model, {})
    if device not in copies:
        copies[device] = copy.deepcopy(model).to(device)
    return copies[device]


def race(
    contenders: list[Contender],
    expected: list[Any] | None,
    output_names: list[str],
    sampling: Sampling = DEFAULT_SAMPLING,
) -> tuple[list[Timing], list[str]]:
    """Check each contender against ``expected``, then time them all in turns.

    Returns one :class:`Timing` per contender (in order; a failing one carries its error) and
    the contenders' notes.
    """
    rows: list[Timing | None] = []
    samplers: list[tuple[int, Sampler, int]] = []
    notes: list[str] = []
    for index, c in enumerate(contenders):
        notes += c.notes
        if c.error is not None or c.outputs is None or c.calibrate is None:
            rows.append(_failed(c, c.error or "cannot run", None))
            continue
        try:
            problem = compare(c.outputs(), expected, output_names) if expected else None
            if problem:
                rows.append(_failed(c, problem, False))
                continue
            sampler, calls = c.calibrate(sampling.min_repeat_ms / 1e3)
        except RemoteError:
            raise
        except MLCError as err:
            rows.append(_failed(c, str(err), None))
            continue
        except Exception as err:  # noqa: BLE001 - one contender failing keeps the others
            rows.append(_failed(c, f"{type(err).__name__}: {str(err).strip()[:300]}", None))
            continue
        rows.append(None)
        samplers.append((index, sampler, calls))
    foreign = any(contenders[i].kind != "tvm" for i, _, _ in samplers)
    samples = samples_in_turns(
        [s for _, s, _ in samplers], max(1, sampling.repeat), SETTLE_S if foreign else 0.0
    )
    for (index, _, calls), taken in zip(samplers, samples, strict=True):
        c = contenders[index]
        rows[index] = timing_from_samples(
            c.name,
            taken,
            calls,
            c.flops,
            correct=True if expected else None,
            kind=c.kind,
            target=c.target,
            bytes=c.bytes,
            device=c.device,
            arithmetic_flops=c.arithmetic_flops,
        )
    return [r for r in rows if r is not None], notes


def _failed(c: Contender, error: str, correct: bool | None) -> Timing:
    return Timing(
        c.name, None, None, None, None, 0, correct=correct, error=error, kind=c.kind,
        device=c.device,
    )  # fmt: skip


def time_module(
    mod_or_built: Any,
    target: Any = None,
    *,
    name: str | None = None,
    func_name: str | None = None,
    args: Any = None,
    ref: Any = None,
    expected: list[Any] | None = None,
    seed: int = 0,
    sampling: Sampling = DEFAULT_SAMPLING,
    namespace: dict[str, Any] | None = None,
    remote: Any = None,
) -> Timing:
    """Build (cached), check against ``ref`` and time one function with ``time_evaluator``.

    ``ref`` is a NumPy expression over the parameter names, a callable, a PyTorch model, a
    module or arrays; a mismatch gives a ``Timing`` with ``correct=False`` and ``error`` set
    instead of a time, sampled as ``sampling`` says. ``remote`` (a
    :class:`~mlc_jupyter.compilation.remote.RemoteModules`) runs and times the function on an
    RPC server's device instead of this machine's.
    """
    if remote is None and not isinstance(getattr(mod_or_built, "built", mod_or_built), Built):
        require_device_here(target, "the module to time is for")  # before building it
    built = as_built(mod_or_built, target)
    sig = prepare(built, function_name_of(mod_or_built, func_name), local=remote is None)
    inputs = model_inputs(built, sig, args, seed)
    contender = tvm_contender(built, sig.name, inputs, name or sig.name, sampling.number, remote)
    if expected is None:
        expected = reference_outputs(ref, inputs[: len(sig.inputs)], sig, built.target, namespace)
        let_threads_settle(after=ref)
    names = [p.name for p in sig.outputs] or ["result"]
    rows, _ = race([contender], expected, names, sampling)
    return rows[0]
