"""This machine's limits: fp32 peak per core count and vector width, and memory bandwidth.

"How fast is this kernel?" needs "against what?". The limits are measured once per machine with
two small TVM kernels built here (so they are what TVM's code generator can reach on this CPU, not
a vendor's figure): independent FMA chains in vector registers on 1..N cores at each vector width
the CPU has, and a large parallel copy for the bandwidth. Each figure is the best of a few short
runs, because a busy machine only ever makes a run slower. Measuring takes about a second and
happens the first time a figure is needed (``%mlc_time``, ``%mlc_tune``, the trace replay), never
at ``%load_ext``. The result is cached in ``<cache>/machine.json`` (:func:`mlc_jupyter.config.
machine_limits_path`), one entry per CPU model, core count and TVM version; ``%mlc_machine
--refresh`` or ``machine_limits(refresh=True)`` measures again.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import json
import math
import os
import platform
import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..cells import parse_script
from ..compilation import is_cpu, resolve_target
from ..config import machine_limits_path
from ..tvm_compat import compile as tvm_compile
from ..tvm_compat import empty, host_cpu, tensor, use_all_cores, vector_bits, version

#: Independent accumulators per core: more than FMA latency x FMA pipes on current x86 and Arm
#: cores, few enough to stay in 16 vector registers with the two operands.
CHAINS = 12
#: Seconds one peak sample runs; short runs mostly measure the thread pool's wake-up.
PEAK_SAMPLE_S = 0.02
#: Elements of each array of the copy: 64 MiB of fp32, far beyond any last-level cache.
COPY_ELEMENTS = 16 * 1024 * 1024
#: Samples per figure; the best counts.
SAMPLES = 3
#: A measurement is *quiet* when other processes used less than this share of one core meanwhile.
QUIET_SHARE = 0.1

_FMA_FUNCTION = """
    @T.prim_func
    def fma_{bits}(x: T.Buffer((2, {lanes}), "float32"), out: T.Buffer(({cores}, {chains}, {lanes}), "float32"), n: T.int32, threads: T.int32):
        T.func_attr({{"global_symbol": "fma_{bits}", "tir.noalias": True}})
        for t in T.parallel(threads):
            acc = T.alloc_buffer(({chains}, {lanes}), "float32", scope="local")
            for c in T.unroll({chains}):
                for v in T.vectorized({lanes}):
                    acc[c, v] = x[1, v] * T.float32(c)
            for it in range(n):
                for c in T.unroll({chains}):
                    for v in T.vectorized({lanes}):
                        acc[c, v] = acc[c, v] * x[0, v] + x[1, v]
            for c in T.unroll({chains}):
                for v in T.vectorized({lanes}):
                    out[t, c, v] = acc[c, v]
"""

_COPY_FUNCTION = """
    @T.prim_func
    def stream_copy(a: T.Buffer(({n},), "float32"), b: T.Buffer(({n},), "float32"), threads: T.int32):
        T.func_attr({{"global_symbol": "stream_copy", "tir.noalias": True}})
        for t in T.parallel(threads):
            for i in range({rows} // threads):
                for v in T.vectorized(64):
                    b[(t * ({rows} // threads) + i) * 64 + v] = a[(t * ({rows} // threads) + i) * 64 + v]
"""


@dataclass(frozen=True)
class MachineLimits:
    """This machine's fp32 limits, measured once and cached (``mlc_jupyter.measure.machine``).

    ``peak_gflops[cores][bits]`` is the fp32 FMA throughput of ``cores`` cores using vectors
    ``bits`` wide; ``bandwidth_gbs[cores]`` the memory bandwidth of a large copy (bytes read plus
    bytes written per second). ``path`` is the cache file, ``seconds`` what measuring took,
    ``quiet`` whether other processes stayed off the CPU meanwhile (if not, figures may read low).
    """

    machine: str
    cores: int
    peak_gflops: dict[int, dict[int, float]]
    bandwidth_gbs: dict[int, float]
    measured_at: str
    seconds: float = 0.0
    path: str = ""
    cached: bool = False
    quiet: bool = True
    #: a GPU's fp16 tensor-core peak (``mma.sync``, fp32 accumulation); ``None`` for a CPU
    tensor_gflops: float | None = None

    @property
    def is_gpu(self) -> bool:
        return self.tensor_gflops is not None

    def _nearest(self, table: dict[int, Any], cores: int | None) -> Any:
        if not table:
            return None
        want = cores or self.cores
        fits = [c for c in table if c <= want]
        return table[max(fits) if fits else min(table)]

    def peak(self, cores: int | None = None, bits: int | None = None) -> float | None:
        """GFLOP/s of ``cores`` cores (all by default) at vector width ``bits`` (widest)."""
        widths = self._nearest(self.peak_gflops, cores)
        if not widths:
            return None
        fits = [b for b in widths if bits is None or b <= bits]
        return float(widths[max(fits)]) if fits else None

    def bandwidth(self, cores: int | None = None) -> float | None:
        """GB/s of ``cores`` cores (all by default)."""
        value = self._nearest(self.bandwidth_gbs, cores)
        return float(value) if value else None

    def roof(self, intensity: float, cores: int | None = None) -> float | None:
        """The roofline: attainable GFLOP/s at ``intensity`` flop per byte."""
        peak, bandwidth = self.peak(cores), self.bandwidth(cores)
        if peak is None or bandwidth is None:
            return peak
        return min(peak, bandwidth * intensity)


def limits_source(widths: list[int], cores: int) -> str:
    """TVMScript (the course's spelling) of the kernels that measure the limits."""
    functions = [
        _FMA_FUNCTION.format(bits=bits, lanes=bits // 32, cores=cores, chains=CHAINS)
        for bits in widths
    ]
    functions.append(_COPY_FUNCTION.format(n=COPY_ELEMENTS, rows=COPY_ELEMENTS // 64))
    return (
        "import tvm\nfrom tvm.script import tir as T\n\n"
        "@tvm.script.ir_module\nclass MachineLimitKernels:" + "".join(functions)
    )


_LOCK = threading.Lock()
_MEMO: dict[str, MachineLimits] = {}


def machine_key() -> str:
    """What identifies this machine's limits: CPU model, LLVM's name for it, cores, TVM."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{model} | {host_cpu()} | {os.cpu_count() or 1} cores | TVM {version()}"


def kernel_cores(target: Any = None) -> int:
    """Cores a CPU kernel runs on: the target's ``num-cores``, else TVM's thread count."""
    if target is not None and "num-cores" in getattr(target, "attrs", {}):
        return int(target.attrs["num-cores"])
    use_all_cores()
    return int(os.environ.get("TVM_NUM_THREADS") or os.cpu_count() or 1)


def cached_machine_limits(key: str | None = None) -> MachineLimits | None:
    """The cached limits of this machine (or of the device ``key`` names: a GPU's), without
    measuring (``None`` when never measured)."""
    key = key or machine_key()
    if key in _MEMO:
        return _MEMO[key]
    entry = _read_cache().get(key)
    if entry is None:
        return None
    try:
        limits = MachineLimits(
            machine=key,
            cores=int(entry["cores"]),
            peak_gflops={
                int(c): {int(b): float(g) for b, g in widths.items()}
                for c, widths in entry["peak_gflops"].items()
            },
            bandwidth_gbs={int(c): float(g) for c, g in entry["bandwidth_gbs"].items()},
            measured_at=str(entry["measured_at"]),
            seconds=float(entry.get("seconds", 0.0)),
            path=str(machine_limits_path()),
            cached=True,
            quiet=bool(entry.get("quiet", False)),
            tensor_gflops=entry.get("tensor_gflops"),
        )
    except (KeyError, TypeError, ValueError):
        return None  # an entry from another version of this file: measure again
    _MEMO[key] = limits
    return limits


#: Machines whose cached limits were taken on a busy machine and were measured again here.
_REMEASURED: set[str] = set()


def machine_limits(refresh: bool = False) -> MachineLimits:
    """This machine's limits: from the cache, or measured now (about a second) and cached.

    Other processes only ever slow a measurement down, so limits measured while the machine was
    busy are measured once more in each later process and each figure keeps its best reading;
    ``refresh=True`` replaces the entry (after a hardware change, say).
    """
    with _LOCK:
        cached = None if refresh else cached_machine_limits()
        if cached is not None and (cached.quiet or cached.machine in _REMEASURED):
            return cached
        limits = _measure_off_thread()
        if cached is not None:
            _REMEASURED.add(cached.machine)
            limits = _best_of(cached, limits)
        _write_cache(limits)
        _MEMO[limits.machine] = limits
        return limits


def _best_of(old: MachineLimits, new: MachineLimits) -> MachineLimits:
    """Each figure's better reading; quiet if either measurement was."""
    peaks = {
        c: {b: max(g, old.peak_gflops.get(c, {}).get(b, 0.0)) for b, g in widths.items()}
        for c, widths in new.peak_gflops.items()
    }
    bandwidth = {c: max(g, old.bandwidth_gbs.get(c, 0.0)) for c, g in new.bandwidth_gbs.items()}
    return dataclasses.replace(
        new, peak_gflops=peaks, bandwidth_gbs=bandwidth, quiet=old.quiet or new.quiet
    )


def core_counts(cores: int) -> list[int]:
    """Core counts worth a figure: 1, the powers of two below ``cores``, and ``cores``."""
    counts = {1, cores}
    power = 2
    while power < cores:
        counts.add(power)
        power *= 2
    return sorted(counts)


def vector_widths(target: Any) -> list[int]:
    """Vector widths in bits the target's CPU has, from 128 up to its widest."""
    widest = max(128, vector_bits(target))
    return [bits for bits in (128, 256, 512, 1024, 2048) if bits <= widest]


def _measure_off_thread() -> MachineLimits:
    """Measure on a thread of its own: a parallel kernel pins the TVM thread that runs it."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["limits"] = _measure()
        except BaseException as err:  # noqa: BLE001 - re-raised on the caller's thread
            box["error"] = err

    thread = threading.Thread(target=run, name="mlc-machine-limits")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["limits"]


@functools.cache
def _kernels(cores: int) -> tuple[Any, list[int]]:
    """The measuring kernels, built once per process: the runtime module and the widths."""
    target = resolve_target(None)
    widths = vector_widths(target)
    source = limits_source(widths, cores)
    executable = tvm_compile(parse_script(source, kind="tir").value, target)
    return getattr(executable, "mod", executable), widths


def _fma_args(bits: int, cores: int) -> tuple[Any, Any]:
    lanes = bits // 32
    return tensor(_fma_operands(lanes)), empty((cores, CHAINS, lanes), "float32")


def peak_sampler(cores: int, bits: int | None = None) -> Any:
    """Seconds per GFLOP of the FMA chains on ``cores`` cores at ``bits`` (the widest): a
    sampler to time the peak in turns with other kernels, as ``bench/`` does."""
    machine = os.cpu_count() or 1
    kernels, widths = _kernels(machine)
    bits = bits or max(widths)
    fma = kernels[f"fma_{bits}"]
    x, out = _fma_args(bits, machine)
    steps, _ = _calibrated_best(fma, x, out, cores)
    gflop = cores * CHAINS * (bits // 32) * 2 * steps / 1e9
    return lambda: _timed(fma, x, out, steps, cores) / gflop


def _measure() -> MachineLimits:
    start = time.perf_counter()
    cores = os.cpu_count() or 1
    counts = core_counts(cores)
    kernels, widths = _kernels(cores)
    others = others_cpu_seconds()
    peaks: dict[int, dict[int, float]] = {c: {} for c in counts}
    for bits in widths:
        fma = kernels[f"fma_{bits}"]
        x, out = _fma_args(bits, cores)
        for count in counts:
            steps, seconds = _calibrated_best(fma, x, out, count)
            peaks[count][bits] = count * CHAINS * (bits // 32) * 2 * steps / seconds / 1e9
    copy = kernels["stream_copy"]
    a = empty((COPY_ELEMENTS,), "float32")
    b = empty((COPY_ELEMENTS,), "float32")
    copy(a, b, cores)  # touch every page once
    copy(b, a, cores)
    bandwidth = {}
    for count in counts:
        if COPY_ELEMENTS // 64 % count == 0:
            best = min(_timed(copy, a, b, count) for _ in range(SAMPLES))
            bandwidth[count] = 2 * 4 * COPY_ELEMENTS / best / 1e9
    elapsed = time.perf_counter() - start
    busy = others()
    return MachineLimits(
        machine=machine_key(),
        cores=cores,
        peak_gflops=peaks,
        bandwidth_gbs=bandwidth,
        measured_at=datetime.datetime.now().isoformat(timespec="seconds"),
        seconds=elapsed,
        path=str(machine_limits_path()),
        quiet=busy is None or busy < QUIET_SHARE * elapsed,
    )


def _fma_operands(lanes: int) -> Any:
    return np.array([[1.0 + 1e-7] * lanes, [1e-7] * lanes], dtype="float32")


def others_cpu_seconds() -> Any:
    """A function that returns the CPU seconds other processes used since this call.

    Read from ``/proc/stat`` minus this process's own CPU time; ``None`` where that file is missing.
    """

    def busy() -> float | None:
        try:
            with open("/proc/stat") as stat:
                fields = [float(x) for x in stat.readline().split()[1:9]]
        except (OSError, ValueError):
            return None
        ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        user, nice, system, _idle, _iowait, irq, softirq, steal = fields
        return (user + nice + system + irq + softirq + steal) / ticks

    start_busy, start_own = busy(), time.process_time()

    def others() -> float | None:
        now = busy()
        if now is None or start_busy is None:
            return None
        return max(0.0, (now - start_busy) - (time.process_time() - start_own))

    return others


def _timed(func: Any, *args: Any) -> float:
    start = time.perf_counter()
    func(*args)
    return time.perf_counter() - start


def _calibrated_best(fma: Any, x: Any, out: Any, cores: int) -> tuple[int, float]:
    """``(steps, seconds)``: the fastest of :data:`SAMPLES` runs of about ``PEAK_SAMPLE_S``."""
    steps = 1 << 12
    while True:
        seconds = _timed(fma, x, out, steps, cores)
        if seconds >= PEAK_SAMPLE_S / 4 or steps >= 1 << 30:
            break
        steps *= 4
    steps = max(1, int(steps * PEAK_SAMPLE_S / max(seconds, 1e-9)))
    return steps, min(_timed(fma, x, out, steps, cores) for _ in range(SAMPLES))


def _read_cache() -> dict[str, Any]:
    path = machine_limits_path()
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def remember_limits(limits: MachineLimits) -> None:
    """Cache ``limits`` (a device's, measured elsewhere) beside this machine's."""
    with _LOCK:
        _write_cache(limits)
        _MEMO[limits.machine] = limits


def _write_cache(limits: MachineLimits) -> None:
    data = _read_cache()
    data[limits.machine] = {
        "cores": limits.cores,
        "peak_gflops": {
            str(c): {str(b): round(g, 2) for b, g in w.items()}
            for c, w in limits.peak_gflops.items()
        },
        "bandwidth_gbs": {str(c): round(g, 2) for c, g in limits.bandwidth_gbs.items()},
        "measured_at": limits.measured_at,
        "seconds": round(limits.seconds, 3),
        "quiet": limits.quiet,
    }
    if limits.tensor_gflops is not None:
        data[limits.machine]["tensor_gflops"] = round(limits.tensor_gflops, 2)
    path = machine_limits_path()
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
    os.replace(tmp, path)


def cpu_limits(target: Any, dtypes: list[str]) -> MachineLimits | None:
    """This machine's limits for kernels built for ``target`` on data of ``dtypes``: measured
    (once) for CPU targets on fp32 data, ``None`` for others (the peak is an fp32 figure)."""
    if target is None or not is_cpu(target):
        return None
    if not dtypes or any(str(d) != "float32" for d in dtypes):
        return None
    try:
        return machine_limits()
    except Exception:  # noqa: BLE001 - a CPU whose measuring kernels fail: no "% of peak", no error
        return None


def percent_of_peak(gflops: float | None, limits: MachineLimits | None, cores: int) -> float | None:
    """``gflops`` as a fraction of the fp32 peak of ``cores`` cores (``None`` when unknown)."""
    if not gflops or limits is None:
        return None
    peak = limits.peak(cores)
    return gflops / peak if peak and not math.isnan(peak) else None
