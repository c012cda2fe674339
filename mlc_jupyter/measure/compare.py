"""Several variants side by side on the same inputs, checked against one reference, timed in turns.

Variants are TVM builds (modules, schedules, tuning results, imported models) and PyTorch models
(rows for the model eager and ``torch.compile``). The reference is ``ref`` (a NumPy expression,
a callable, a PyTorch model, a module, arrays), else a PyTorch model among the variants, else the
model an imported module came from, else the first variant.
"""

from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..compilation import made_for
from ..compilation.cached_build import Built
from ..compilation.call import prepare, require_device_here
from ..compilation.remote import RemoteModules, rpc_for
from ..errors import MLCError, RemoteError, TimingError
from .gpu_limits import device_limits
from .machine import ABOVE_PEAK, MachineLimits, checked_against, kernel_cores
from .race import (
    Contender,
    TorchPlacement,
    callable_contender,
    device_name,
    outputs_on,
    race,
    torch_contenders,
    torch_placement,
    tvm_contender,
)
from .reference import expression_function, is_torch_module, reference_outputs
from .runtimes import runtime_contenders
from .timer import (
    DEFAULT_SAMPLING,
    NOISY_SPREAD,
    Sampling,
    Timing,
    as_built,
    function_name_of,
    let_threads_settle,
    model_inputs,
)


@dataclass(frozen=True)
class TimingReport:
    """Several variants side by side (``%mlc_time f g`` / ``time_functions``).

    ``limits`` is this machine's (CPU variants on fp32 data), for "% of peak" and the roofline
    of ``cores`` cores. ``warnings`` bear on the result (a ranking the runs' spread makes
    uncertain); ``notes`` only inform (how long ``torch.compile`` took).
    """

    timings: tuple[Timing, ...]
    warnings: tuple[str, ...] = ()
    limits: MachineLimits | None = None
    cores: int = 1
    notes: tuple[str, ...] = ()

    def peak_fraction(self, timing: Timing) -> float | None:
        """``timing``'s GFLOP/s as a share of this machine's fp32 peak (``None`` when unknown)."""
        peak = self.limits.peak(self.cores) if self.limits else None
        return timing.gflops / peak if peak and timing.gflops else None

    def bounding_peak(self, timing: Timing) -> float | None:
        """The fp32 peak where it is what bounds ``timing``: at the intensity of the arithmetic
        its kernels do, the roof is the peak, not the memory's bandwidth (``None`` otherwise)."""
        peak = self.limits.peak(self.cores) if self.limits else None
        work = timing.arithmetic_flops or timing.flops
        if not peak or not work or not timing.bytes or self.limits is None:
            return None
        roof = self.limits.roof(work / timing.bytes, self.cores)
        return peak if roof is not None and roof >= peak else None

    def __getitem__(self, name: str) -> Timing:
        for timing in self.timings:
            if timing.name == name:
                return timing
        raise KeyError(name)

    @property
    def names(self) -> list[str]:
        return [t.name for t in self.timings]


def time_functions(
    variants: dict[str, Any],
    target: Any = None,
    *,
    func_name: str | None = None,
    args: Any = None,
    ref: Any = None,
    seed: int = 0,
    sampling: Sampling = DEFAULT_SAMPLING,
    namespace: dict[str, Any] | None = None,
    baselines: bool = True,
    torch_compile: bool = True,
    runtimes: bool = False,
    rpc: Any = None,
) -> TimingReport:
    """Time each variant on the same inputs, in turns; compare with the reference.

    When ``ref`` is a NumPy expression and ``baselines`` is true, NumPy and PyTorch rows are
    added; when the reference is a PyTorch model (given, or the one an imported model came
    from), rows for it eager and under ``torch.compile`` (unless ``torch_compile`` is false).
    ``runtimes`` adds rows for that PyTorch model under ONNX Runtime, OpenVINO and
    ``torch.compile`` with inductor freezing (:mod:`.runtimes`; a runtime that is not installed
    is a row saying so). Speed-ups are against the first row; each row is sampled as
    ``sampling`` says. ``rpc`` (``HOST:PORT:KEY`` or ``"env"``; for a GPU
    this machine lacks, ``TVM_TRACKER_HOST/PORT/KEY`` when set) runs and times the TVM variants
    on an RPC server's device, in one session; NumPy and PyTorch rows, which could only run
    here, are left out then.
    """
    if not variants:
        raise MLCError("nothing to time: name at least one built function or module")
    first_variant = next(
        (getattr(v, "built", v) for v in variants.values() if not is_torch_module(v)), None
    )
    spec = rpc_for(rpc, target if target is not None else made_for(first_variant))
    if spec is None:
        for v in variants.values():
            if not isinstance(getattr(v, "built", v), Built) and not is_torch_module(v):
                # before building it; a tuning result is built for the target it was tuned for
                require_device_here(
                    target if target is not None else made_for(v), "the module to time is for"
                )
    builts: dict[str, Built] = {}
    for name, obj in variants.items():
        if not is_torch_module(obj):
            builts[name] = as_built(obj, target)
    models = {name: obj for name, obj in variants.items() if is_torch_module(obj)}
    if not builts:
        raise TimingError(
            "give at least one TVM variant to race PyTorch against",
            hint="import the model first: %mlc_import MODEL --inputs EXPR",
        )
    with RemoteModules(spec) if spec else contextlib.nullcontext() as remote:
        timings, notes, sig = _race_variants(
            variants, builts, models, remote, func_name, args, ref, seed, sampling, namespace,
            baselines, torch_compile, runtimes,
        )  # fmt: skip
    first = next(iter(builts.values()))
    flops = next((t.flops for t in timings if t.flops), None)
    size = next((t.bytes for t in timings if t.bytes), None)
    timings = [
        dataclasses.replace(t, flops=flops, gflops=flops / t.median_s / 1e9, bytes=size)
        if t.kind != "tvm" and flops and t.median_s
        else t
        for t in timings
    ]
    # the limits are this machine's: none for variants timed on an RPC server
    limits = (
        None
        if spec is not None
        else device_limits(first.target, [p.dtype for p in sig.params if not p.scalar])
    )
    report = _finish(timings, notes)
    cores = kernel_cores(first.target)
    limits, above, fewer = _checked_peak(limits, report.timings, cores)
    return dataclasses.replace(
        report,
        limits=limits,
        cores=cores,
        warnings=report.warnings + above,
        notes=report.notes + fewer,
    )


def _checked_peak(
    limits: MachineLimits | None, timings: tuple[Timing, ...], cores: int
) -> tuple[MachineLimits | None, tuple[str, ...], tuple[str, ...]]:
    """The limits, measured again when a row's arithmetic ran above their peak (it read low);
    a warning for each row still above it, whose rate counts the FLOPs of the work as written, so
    it must do less arithmetic than that (a Winograd convolution, say); and a note for each row
    above the peak only on the FLOPs as written, whose kernels are known to do fewer (this
    build's Winograd convolutions): nothing is wrong with the peak or the row there."""
    fastest = max(timings, key=lambda t: t.arithmetic_gflops or 0.0, default=None)
    if limits is None or fastest is None or not fastest.arithmetic_gflops:
        return limits, (), ()
    limits = checked_against(limits, fastest.arithmetic_gflops, cores, f"the row {fastest.name}")
    peak = limits.peak(cores) if limits is not None else None
    if not peak or limits is None:
        return limits, (), ()
    again = " (measured again just now)" if limits.remeasured else ""
    above = peak * (1 + ABOVE_PEAK)
    warnings = tuple(
        f"{t.name} reads {t.gflops / peak:.0%} of this machine's fp32 peak ({peak:.1f} GFLOP/s, "
        f"{limits.measured()}{again}): its rate counts the FLOPs of the computation as written, "
        "so it does less arithmetic than that (a Winograd or FFT convolution, say)"
        for t in timings
        if t.arithmetic_gflops and t.arithmetic_gflops > above
    )
    notes = tuple(
        f"{t.name}: {t.gflops / peak:.0%} of the peak on the FLOPs of the model as written "
        f"({t.flops / 1e9:.2f} GFLOP); its kernels compute {t.arithmetic_flops / 1e9:.2f} GFLOP "
        f"(Winograd convolutions multiply less), {t.arithmetic_gflops / peak:.0%} of the peak"
        for t in timings
        if t.gflops and t.gflops > above and t.arithmetic_flops and t.flops
        and t.arithmetic_gflops and t.arithmetic_gflops <= above
    )  # fmt: skip
    return limits, warnings, notes


def _race_variants(
    variants: dict[str, Any],
    builts: dict[str, Built],
    models: dict[str, Any],
    remote: Any,
    func_name: str | None,
    args: Any,
    ref: Any,
    seed: int,
    sampling: Sampling,
    namespace: dict[str, Any] | None,
    baselines: bool,
    torch_compile: bool,
    runtimes: bool = False,
) -> tuple[list[Timing], list[str], Any]:
    """The race itself: inputs, reference, one contender per row, timed in turns.

    Returns the rows, the contenders' notes and the signature of the function raced.
    """
    first_name, first = next(iter(builts.items()))
    sig = prepare(first, function_name_of(variants[first_name], func_name), local=remote is None)
    origin = next((b.origin for b in builts.values() if b.origin is not None), None)
    inputs = model_inputs(first, sig, args, seed)
    if args is None and origin is not None and first.origin is None:
        inputs = list(origin.example_args)
    if ref is None and models:
        ref = next(iter(models.values()))
    elif ref is None and origin is not None:
        ref = origin.model
        if baselines and remote is None:
            models = {_label(origin.model, namespace): origin.model}
    if remote is not None and ref is None:  # the first variant, run where all are timed
        expected = outputs_on(first, sig.name, inputs, remote)
    else:
        expected = reference_outputs(
            ref if ref is not None else first,
            inputs[: len(sig.inputs)],
            sig,
            first.target,
            namespace,
        )
    let_threads_settle(after=ref)  # a NumPy or PyTorch reference leaves spinning threads
    # PyTorch races on the device the TVM variants run on (its GPU for a CUDA build)
    placement = torch_placement(first.target) if remote is None else None
    contenders: list[Contender] = []
    for name, obj in variants.items():
        if name in models and remote is not None:
            contenders.append(Contender(name, "torch", error=_HERE_ONLY))
        elif name in models:
            contenders += torch_contenders(obj, inputs, name, torch_compile, placement)
        elif name in builts:
            if remote is not None:
                remote.device(builts[name].target)  # no device there: say so, not once per row
            contenders.append(
                _tvm_row(builts[name], obj, name, sig, func_name, inputs, sampling.number, remote)
            )
    for name, model in models.items():
        if name not in variants:
            contenders += torch_contenders(model, inputs, name, torch_compile, placement)
    if isinstance(ref, str) and baselines and remote is None:
        contenders += _expression_rows(ref, sig, inputs, namespace, placement)
    if is_torch_module(ref) and baselines and not models and remote is None:
        label = _label(ref, namespace)
        contenders += torch_contenders(ref, inputs, label, torch_compile, placement)
    if runtimes:
        contenders += _runtime_rows(ref, models, namespace, inputs, first, placement)
    names = [p.name for p in sig.outputs] or ["result"]
    timings, notes = race(contenders, expected, names, sampling)
    return timings, notes, sig


def _runtime_rows(
    ref: Any,
    models: dict[str, Any],
    namespace: dict[str, Any] | None,
    inputs: list[Any],
    first: Built,
    placement: TorchPlacement | None,
) -> list[Contender]:
    """The deployment runtimes' rows for the race's PyTorch model (the reference, else the
    first PyTorch model among the variants), run on as many threads as the TVM variants."""
    if is_torch_module(ref):
        model, label = ref, next((n for n, m in models.items() if m is ref), None)
        label = label or _label(ref, namespace)
    elif models:
        label, model = next(iter(models.items()))
    else:
        raise TimingError(
            "--runtimes races ONNX Runtime and OpenVINO on a PyTorch model, and this race has none",
            hint="give the model: --ref MODEL (an imported model's own is the default)",
        )
    left_out = None
    if placement is None:
        left_out = "left out: the TVM variants run on an RPC server's device, these runtimes here"
    elif placement.device != "cpu":
        left_out = (
            f"left out: the TVM variants run on {device_name(first.target)}, these runtimes on "
            "the CPU"
        )
    return runtime_contenders(model, inputs, label, kernel_cores(first.target), left_out)


#: Why a PyTorch row is empty in a race on an RPC server.
_HERE_ONLY = "a PyTorch model runs on this machine, not on the RPC server's device"


def _tvm_row(
    built: Built,
    obj: Any,
    name: str,
    sig: Any,
    func_name: str | None,
    inputs: list,
    number: Any,
    remote: Any = None,
) -> Contender:
    fname = function_name_of(obj, func_name)
    fname = fname if fname in built.signatures else None
    if fname is None and sig.name in built.signatures:
        fname = sig.name
    try:
        return tvm_contender(built, fname, inputs, name, number, remote)
    except RemoteError:
        raise
    except MLCError as err:
        return Contender(name, "tvm", error=str(err))


def _label(model: Any, namespace: dict[str, Any] | None) -> str:
    """The notebook's name of a PyTorch model (its class name when it has none)."""
    for key, value in (namespace or {}).items():
        if value is model and not key.startswith("_"):
            return key
    return type(model).__name__


def _expression_rows(
    expr: str, sig: Any, inputs: list[Any], namespace: Any, placement: TorchPlacement | None
) -> list[Contender]:
    """NumPy (on the CPU) and PyTorch (where the TVM variants run) rows evaluating the
    reference expression."""
    names = [p.name for p in sig.inputs]
    rows = []
    for lib in ("numpy", "torch"):
        device = "cpu" if lib == "numpy" or placement is None else placement.device
        if device is None:
            rows.append(Contender(lib, lib, error=placement.reason, device=""))
            continue
        try:
            fn = expression_function(expr, names, namespace, lib)
            args = list(inputs[: len(names)])
            if lib == "torch":
                import torch  # deferred: optional, and slow to import

                args = [
                    torch.from_numpy(x).to(device) if isinstance(x, np.ndarray) else x for x in args
                ]  # a scalar argument stays a number
            rows.append(callable_contender(lib, fn, args, lib, device=device))
        except Exception as err:  # noqa: BLE001 - a baseline row that cannot run says why
            rows.append(Contender(lib, lib, error=f"{type(err).__name__}: {err}"))
    return rows


def _finish(timings: list[Timing], notes: list[str] | None = None) -> TimingReport:
    base = timings[0].median_s if timings else None
    done = [
        dataclasses.replace(t, speedup=base / t.median_s if base and t.median_s else None)
        for t in timings
    ]
    return TimingReport(tuple(done), tuple(uncertain_ranking(done)), notes=tuple(notes or ()))


def uncertain_ranking(timings: list[Timing]) -> list[str]:
    """At most one line, in plain words: the conclusions the table invites that the runs'
    spread does not support. Those are which variant is fastest (the two fastest) and each row's
    speed-up over the first; a pair is too close to call when its gap is within the runs'
    spread and a spread is wide (:data:`NOISY_SPREAD`). Every other spread is the table's ``±``
    column only: a note on every close pair read like an error on an ordinary run."""
    timed = [t for t in timings if t.median_s and t.std_s is not None]
    ranked = sorted(timed, key=_median)
    pairs = [tuple(ranked[:2])] if len(ranked) >= 2 else []
    if timings and timings[0] in timed:
        pairs += [tuple(sorted((timings[0], t), key=_median)) for t in timed[1:]]
    close = []
    for fast, slow in dict.fromkeys(pairs):  # each pair once, in order
        noisy = max(fast.spread or 0.0, slow.spread or 0.0) > NOISY_SPREAD
        if noisy and slow.median_s - fast.median_s < fast.std_s + slow.std_s:
            close.append(f"{fast.name} and {slow.name} (±{fast.spread:.0%}, ±{slow.spread:.0%})")
    if not close:
        return []
    return [
        f"too close to call: {'; '.join(close)} differ by less than their runs vary, so which "
        "is faster, and the speed-up between them, may change on another run (more --repeat, "
        "or a quieter machine, settles it)"
    ]


def _median(t: Timing) -> float:
    return t.median_s or 0.0


def report_for(timing: Timing) -> TimingReport:
    """A one-row report for a single ``Timing``."""
    return _finish([timing])


__all__ = ["Built", "report_for", "time_functions"]
