"""This machine's limits: fp32 peak per core count and vector width, and memory bandwidth.

"How fast is this kernel?" needs "against what?". The limits are measured once per machine with
two small TVM kernels built here (so they are what TVM's code generator can reach on this CPU, not
a vendor's figure): independent FMA chains in vector registers on 1..N cores at each vector width
the CPU has, and a large parallel copy for the bandwidth. Each figure is the best of a few short
runs, because a busy machine only ever makes a run slower; while other processes use the CPU,
the whole measurement is repeated (up to :data:`ROUNDS` rounds) and each figure keeps its best.
Measuring takes about a second and happens the first time a figure is needed (``%mlc_time``,
``%mlc_tune``, the trace replay), never at ``%load_ext``. The result is cached in
``<cache>/machine.json`` (:func:`mlc_jupyter.config.machine_limits_path`), one entry per CPU
model, core count and TVM version, with when it was measured and under what load;
``%mlc_machine --refresh`` or ``machine_limits(refresh=True)`` measures again, and so does a
kernel or runtime observed above the peak (:func:`checked_against`): the peak read low.
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
#: Rounds of the whole measurement at most; a quiet round ends it.
ROUNDS = 3
#: Pause between rounds, so one burst of another process does not spoil them all.
ROUND_PAUSE_S = 0.2
#: A rate this far above the peak says the peak read low (within it: the runs' own spread).
ABOVE_PEAK = 0.02

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
    #: the 1-minute load average when measured (``None``: unknown)
    load: float | None = None
    #: the share of one core other processes used while measuring (``None``: unknown)
    others_share: float | None = None
    #: why the figures were last measured again (a rate observed above the peak), if they were
    remeasured: str = ""

    @property
    def is_gpu(self) -> bool:
        return self.tensor_gflops is not None

    def measured(self) -> str:
        """When and under what load: ``measured 2026-11-28T10:15:38, load 0.52, other processes
        3% of a core``."""
        parts = [f"measured {self.measured_at}"]
        if self.load is not None:
            parts.append(f"load {self.load:.2f}")
        if self.others_share is not None:
            parts.append(f"other processes {self.others_share:.0%} of a core")
        return ", ".join(parts)

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
            load=entry.get("load"),
            others_share=entry.get("others_share"),
            remeasured=str(entry.get("remeasured", "")),
        )
    except (KeyError, TypeError, ValueError):
        return None  # an entry from another version of this file: measure again
    _MEMO[key] = limits
    return limits


#: Machines measured in this process (at most once more, unless refreshed or beaten).
_REMEASURED: set[str] = set()
#: Machines whose peak a rate beat and were measured again because of it, in this process.
_BEATEN: set[str] = set()


def machine_limits(refresh: bool = False) -> MachineLimits:
    """This machine's limits: from the cache, or measured now (about a second) and cached.

    Other processes only ever slow a measurement down, so a measurement is repeated while they
    use the CPU (:data:`ROUNDS` at most) and each figure keeps its best reading; limits a busy
    machine gave are measured once more in a later process (never twice in one, so a figure
    does not change under a run that uses it); ``refresh=True`` replaces the entry (after a
    hardware change, say).
    """
    with _LOCK:
        cached = None if refresh else cached_machine_limits()
        if cached is not None and (cached.quiet or cached.machine in _REMEASURED):
            return cached
        limits = _measure_rounds()
        if cached is not None:
            limits = _best_of(cached, limits)
        _REMEASURED.add(limits.machine)
        _write_cache(limits)
        _remember_in_process(limits)
        return limits


def checked_against(
    limits: MachineLimits | None, gflops: float | None, cores: int, what: str
) -> MachineLimits | None:
    """``limits``, measured again (once per process) when ``what`` ran at ``gflops`` on
    ``cores`` cores, above their fp32 peak: no code beats the peak, so the peak read low (it was
    measured on a busy machine). The new figures keep the better of both measurements and say
    why they were taken. A GPU's limits, or a rate within the peak, come back as they are."""
    peak = limits.peak(cores) if limits is not None else None
    if limits is None or limits.is_gpu or not peak or not gflops:
        return limits
    if gflops <= peak * (1 + ABOVE_PEAK) or limits.machine != machine_key():
        return limits
    with _LOCK:
        if limits.machine in _BEATEN:
            return _MEMO.get(limits.machine, limits)
        _BEATEN.add(limits.machine)
        again = _best_of(limits, _measure_rounds())
        again = dataclasses.replace(
            again,
            remeasured=f"{what} ran at {gflops:.1f} GFLOP/s, above the peak of {peak:.1f} "
            f"GFLOP/s {limits.measured()}",
        )
        _REMEASURED.add(again.machine)
        _write_cache(again)
        _remember_in_process(again)
        return again


def _measure_rounds() -> MachineLimits:
    """Measure until a round is quiet (:data:`ROUNDS` at most), each figure's best reading."""
    best = _measure_off_thread()
    for _ in range(ROUNDS - 1):
        if best.quiet:
            break
        time.sleep(ROUND_PAUSE_S)
        best = _best_of(best, _measure_off_thread())
    return best


def _best_of(old: MachineLimits, new: MachineLimits) -> MachineLimits:
    """Each figure's better reading; quiet if either measurement was, and the load of the
    quieter one."""
    peaks = {
        c: {b: max(g, old.peak_gflops.get(c, {}).get(b, 0.0)) for b, g in widths.items()}
        for c, widths in new.peak_gflops.items()
    }
    bandwidth = {c: max(g, old.bandwidth_gbs.get(c, 0.0)) for c, g in new.bandwidth_gbs.items()}
    quieter = new
    if old.others_share is not None and (
        new.others_share is None or old.others_share < new.others_share
    ):
        quieter = old
    return dataclasses.replace(
        new,
        peak_gflops=peaks,
        bandwidth_gbs=bandwidth,
        quiet=old.quiet or new.quiet,
        load=quieter.load,
        others_share=quieter.others_share,
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
    share = round(busy / elapsed, 3) if busy is not None and elapsed > 0 else None
    return MachineLimits(
        machine=machine_key(),
        cores=cores,
        peak_gflops=peaks,
        bandwidth_gbs=bandwidth,
        measured_at=datetime.datetime.now().isoformat(timespec="seconds"),
        seconds=elapsed,
        path=str(machine_limits_path()),
        quiet=share is None or share < QUIET_SHARE,
        load=_load(),
        others_share=share,
    )


def _load() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


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
        _remember_in_process(limits)


def _remember_in_process(limits: MachineLimits) -> None:
    """Keep ``limits`` for this process's later asks, which get them from the cache: marked so."""
    _MEMO[limits.machine] = dataclasses.replace(limits, cached=True)


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
    for name in ("load", "others_share"):
        if getattr(limits, name) is not None:
            data[limits.machine][name] = round(getattr(limits, name), 3)
    if limits.remeasured:
        data[limits.machine]["remeasured"] = limits.remeasured
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
