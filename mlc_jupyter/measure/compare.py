"""Several variants side by side, checked against one reference, with NumPy / PyTorch rows."""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any

from ..compilation.call import prepare, require_device_here
from ..compilation.remote import RemoteModules, rpc_for
from ..errors import MLCError, RemoteError
from ..results import Built, Timing, TimingReport
from .inputs import random_inputs
from .machine import cpu_limits, kernel_cores
from .reference import expression_function, reference_outputs
from .timer import (
    DEFAULT_MIN_REPEAT_MS,
    NOISY_SPREAD,
    as_built,
    function_name_of,
    let_threads_settle,
    outputs_on,
    time_callable,
    time_module,
)


def time_functions(
    variants: dict[str, Any],
    target: Any = None,
    *,
    func_name: str | None = None,
    args: Any = None,
    ref: Any = None,
    seed: int = 0,
    number: int | None = None,
    repeat: int = 5,
    min_repeat_ms: float = DEFAULT_MIN_REPEAT_MS,
    namespace: dict[str, Any] | None = None,
    baselines: bool = True,
    rpc: Any = None,
) -> TimingReport:
    """Time each variant on the same inputs; compare with ``ref`` or else the first variant.

    When ``ref`` is a NumPy expression and ``baselines`` is true, NumPy and PyTorch rows are
    added. Speed-ups are against the first variant. ``rpc`` (``HOST:PORT:KEY`` or ``"env"``;
    for a GPU this machine lacks, ``TVM_TRACKER_HOST/PORT/KEY`` when set) runs and times the
    variants on an RPC server's device, in one session; NumPy and PyTorch rows, which could
    only run here, are left out then.
    """
    if not variants:
        raise MLCError("nothing to time: name at least one built function or module")
    first_variant = next(iter(variants.values()))
    first_variant = getattr(first_variant, "built", first_variant)
    spec = rpc_for(rpc, first_variant.target if isinstance(first_variant, Built) else target)
    if spec is None and any(
        not isinstance(getattr(v, "built", v), Built) for v in variants.values()
    ):
        require_device_here(target, "the module to time is for")  # before building it
    builts = {name: as_built(obj, target) for name, obj in variants.items()}
    names = {name: function_name_of(obj, func_name) for name, obj in variants.items()}
    first = next(iter(builts.values()))
    with RemoteModules(spec) if spec else contextlib.nullcontext() as remote:
        sig = prepare(first, names[next(iter(builts))], local=remote is None)
        inputs = list(args) if args is not None else random_inputs(sig, seed)
        inputs = inputs[: len(sig.inputs)]
        if remote is not None and ref is None:  # the first variant, run where all are timed
            expected = outputs_on(first, sig.name, inputs, remote)
        else:
            expected = reference_outputs(
                ref if ref is not None else first, inputs, sig, first.target, namespace
            )
        let_threads_settle(after=ref)  # a NumPy or PyTorch reference leaves spinning threads
        options = {
            "number": number,
            "repeat": repeat,
            "min_repeat_ms": min_repeat_ms,
            "remote": remote,
        }
        timings: list[Timing] = []
        for name, built in builts.items():
            fname = names[name] if names[name] in built.signatures else None
            if fname is None and sig.name in built.signatures:
                fname = sig.name
            if remote is not None:
                remote.device(built.target)  # no device there: say so, not once per row
            try:
                timings.append(
                    time_module(
                        built, func_name=fname, args=inputs, expected=expected, name=name, **options
                    )
                )
            except RemoteError:
                raise
            except MLCError as err:
                timings.append(Timing(name, None, None, None, None, 0, error=str(err)))
    flops = next((t.flops for t in timings if t.flops), None)
    size = next((t.bytes for t in timings if t.bytes), None)
    if isinstance(ref, str) and baselines and remote is None:
        for lib in ("numpy", "torch"):
            let_threads_settle()
            row = _baseline(lib, ref, sig, inputs, namespace, flops, repeat, min_repeat_ms)
            timings.append(dataclasses.replace(row, bytes=size))
    # the limits are this machine's: none for variants timed on an RPC server
    limits = None if remote is not None else cpu_limits(first.target, [p.dtype for p in sig.params])
    return dataclasses.replace(_finish(timings), limits=limits, cores=kernel_cores(first.target))


def _baseline(
    lib: str,
    expr: str,
    sig: Any,
    inputs: list[Any],
    namespace: Any,
    flops: float | None,
    repeat: int,
    min_repeat_ms: float,
) -> Timing:
    names = [p.name for p in sig.inputs]
    try:
        fn = expression_function(expr, names, namespace, lib)
        args = inputs
        if lib == "torch":
            import torch

            args = [torch.from_numpy(x) for x in inputs]
        return time_callable(
            lib, fn, args, repeat=repeat, min_repeat_ms=min_repeat_ms, flops=flops, kind=lib
        )
    except Exception as err:  # noqa: BLE001 - a baseline row that cannot run says why
        return Timing(
            lib, None, None, None, None, 0, kind=lib, error=f"{type(err).__name__}: {err}"
        )


def _finish(timings: list[Timing]) -> TimingReport:
    base = timings[0].median_s if timings else None
    done, warnings = [], []
    for t in timings:
        speedup = base / t.median_s if base and t.median_s else None
        done.append(dataclasses.replace(t, speedup=speedup))
        if t.spread is not None and t.spread > NOISY_SPREAD:
            warnings.append(
                f"{t.name}: runs vary by {t.spread:.0%} (std / median); the machine may be busy"
            )
    return TimingReport(tuple(done), tuple(warnings))


def report_for(timing: Timing) -> TimingReport:
    """A one-row report (with the spread warning) for a single ``Timing``."""
    return _finish([timing])


__all__ = ["Built", "report_for", "time_functions"]
