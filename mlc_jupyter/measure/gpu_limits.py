"""A CUDA GPU's limits: fp32 FMA peak, tensor-core peak and memory bandwidth, measured with TVM.

The GPU half of :mod:`.machine`, with the same design: small TVM kernels built here measure what
TVM's code generator reaches on this GPU (not a vendor's figure), each figure is the best of a
few runs, and the result is cached beside the CPU's (one entry per GPU model, architecture and
TVM version). The kernels: every thread runs independent FMA chains in registers (the fp32 peak);
every warp issues independent ``mma.sync`` m16n8k16 fp16 products accumulated in fp32 (the
tensor-core peak TVM's tensor intrinsics reach); a large copy with 16-byte accesses (HBM
bandwidth, bytes read plus bytes written per second).
"""

from __future__ import annotations

import datetime
import functools
import time
from typing import Any

import numpy as np

from ..cells import parse_script
from ..compilation import device_for, gpu_present, is_cuda, resolve_target
from ..compilation.call import require_device_here
from ..config import machine_limits_path
from ..tvm_compat import PTX_MMA, empty, tensor, version
from ..tvm_compat import compile as tvm_compile
from .machine import MachineLimits, cached_machine_limits, cpu_limits, remember_limits

#: Thread blocks of the FMA and mma kernels: several waves on the largest GPUs.
BLOCKS = 4096
#: Threads per block of the FMA kernel; warps per block of the mma kernel.
THREADS, WARPS = 256, 8
#: Independent FMA chains per thread and mma accumulators per warp (latency hidden by both).
CHAINS, ACCUMULATORS = 8, 4
#: Elements of each array of the copy: 256 MiB of fp32, far beyond any GPU cache.
COPY_ELEMENTS = 64 * 1024 * 1024
#: Seconds one peak run lasts, and runs per figure (the best counts).
RUN_S, SAMPLES = 0.02, 5
#: FLOPs of one m16n8k16 product.
MMA_FLOP = 2 * 16 * 8 * 16

_KERNELS = """
import tvm
from tvm.script import tir as T

@tvm.script.ir_module
class GpuLimitKernels:
    @T.prim_func
    def fma(x: T.Buffer((2,), "float32"), out: T.Buffer(({threads_all} * {chains},), "float32"), n: T.int32):
        T.func_attr({{"global_symbol": "fma", "tir.noalias": True}})
        for b in T.thread_binding({blocks}, thread="blockIdx.x"):
            for t in T.thread_binding({threads}, thread="threadIdx.x"):
                acc = T.alloc_buffer(({chains},), "float32", scope="local")
                for c in T.unroll({chains}):
                    acc[c] = x[1] * T.float32(c)
                for it in range(n):
                    for c in T.unroll({chains}):
                        acc[c] = acc[c] * x[0] + x[1]
                for c in T.unroll({chains}):
                    out[(b * {threads} + t) * {chains} + c] = acc[c]

    @T.prim_func
    def mma(x: T.Buffer((8,), "float16"), out: T.Buffer(({lanes_all} * {acc_floats},), "float32"), n: T.int32):
        T.func_attr({{"global_symbol": "mma", "tir.noalias": True}})
        for b in T.thread_binding({blocks}, thread="blockIdx.x"):
            for w in T.thread_binding({warps}, thread="threadIdx.y"):
                for tx in T.thread_binding(32, thread="threadIdx.x"):
                    a = T.alloc_buffer((8,), "float16", scope="local")
                    bb = T.alloc_buffer((4,), "float16", scope="local")
                    c = T.alloc_buffer(({acc_floats},), "float32", scope="local")
                    for i in range(8):
                        a[i] = x[i]
                    for i in range(4):
                        bb[i] = x[i]
                    for i in range({acc_floats}):
                        c[i] = T.float32(0)
                    for it in range(n):
                        for k in T.unroll({accumulators}):
                            T.evaluate({mma}("m16n8k16", "row", "col", "fp16", "fp16", "fp32", a.data, 0, bb.data, 0, c.data, k * 4, False, dtype="float32"))
                    for i in range({acc_floats}):
                        out[((b * {warps} + w) * 32 + tx) * {acc_floats} + i] = c[i]

    @T.prim_func
    def copy(a: T.Buffer(({copy},), "float32"), b: T.Buffer(({copy},), "float32")):
        T.func_attr({{"global_symbol": "copy", "tir.noalias": True}})
        for i0 in T.thread_binding({copy} // 1024, thread="blockIdx.x"):
            for i1 in T.thread_binding(256, thread="threadIdx.x"):
                for v in T.vectorized(4):
                    b[(i0 * 256 + i1) * 4 + v] = a[(i0 * 256 + i1) * 4 + v]
"""


def kernels_source() -> str:
    """TVMScript (the course's spelling) of the kernels that measure a GPU's limits."""
    return _KERNELS.format(
        blocks=BLOCKS, threads=THREADS, threads_all=BLOCKS * THREADS, chains=CHAINS,
        warps=WARPS, lanes_all=BLOCKS * WARPS * 32, accumulators=ACCUMULATORS,
        acc_floats=ACCUMULATORS * 4, mma=PTX_MMA, copy=COPY_ELEMENTS,
    )  # fmt: skip


def kernels_module() -> Any:
    """The measuring kernels as an IRModule (built for the GPU by :func:`gpu_limits`)."""
    return parse_script(kernels_source(), kind="tir").value


def gpu_key(target: Any) -> str:
    """What identifies a GPU's limits: its name, architecture and the TVM version."""
    target = resolve_target(target)
    name = device_for(target).device_name
    return f"{name} | {target.attrs.get('arch', '')} | TVM {version()}"


def gpu_limits(target: Any = "cuda", refresh: bool = False) -> MachineLimits:
    """The limits of the GPU ``target`` runs on: from the cache, or measured now and cached.

    Raises ``NoGPUError`` when this machine has no such GPU.
    """
    require_device_here(target, "the limits asked for are")
    key = gpu_key(target)
    cached = None if refresh else cached_machine_limits(key)
    if cached is not None:
        return cached
    limits = _measure(resolve_target(target), key)
    remember_limits(limits)
    return limits


def device_limits(target: Any, dtypes: list[str]) -> MachineLimits | None:
    """The limits a kernel built for ``target`` on ``dtypes`` data is measured against: this
    CPU's (:func:`.machine.cpu_limits`) or, for CUDA on fp32 data, the local GPU's; ``None``
    when unknown (another device, other data, a GPU that is not here)."""
    if target is None or not is_cuda(target):
        return cpu_limits(target, dtypes)
    if not dtypes or any(str(d) != "float32" for d in dtypes) or not gpu_present(target):
        return None
    try:
        return gpu_limits(target)
    except Exception:  # noqa: BLE001 - a GPU whose measuring kernels fail: no "% of peak", no error
        return None


@functools.cache
def _built(target_text: str) -> Any:
    executable = tvm_compile(kernels_module(), resolve_target(target_text))
    return getattr(executable, "mod", executable)


def _best_seconds(kernels: Any, name: str, device: Any, *args: Any) -> float:
    timer = kernels.time_evaluator(name, device, number=1, repeat=SAMPLES)
    return min(timer(*args).results)


def _calibrated(kernels: Any, name: str, device: Any, *args: Any) -> tuple[int, float]:
    """``(steps, seconds)``: the loop count that makes one run about :data:`RUN_S`, and the
    best of :data:`SAMPLES` runs of it."""
    steps = 64
    while True:
        seconds = _best_seconds(kernels, name, device, *args, steps)
        if seconds >= RUN_S / 4 or steps >= 1 << 24:
            break
        steps *= 4
    steps = max(1, int(steps * RUN_S / max(seconds, 1e-9)))
    return steps, _best_seconds(kernels, name, device, *args, steps)


def _measure(target: Any, key: str) -> MachineLimits:
    start = time.perf_counter()
    device = device_for(target)
    kernels = _built(str(target))
    x = tensor(np.array([1.0 + 1e-7, 1e-7], "float32"), device)
    out = empty((BLOCKS * THREADS * CHAINS,), "float32", device)
    steps, seconds = _calibrated(kernels, "fma", device, x, out)
    fp32 = BLOCKS * THREADS * CHAINS * 2 * steps / seconds / 1e9
    halves = tensor(np.full(8, 1e-3, "float16"), device)
    acc = empty((BLOCKS * WARPS * 32 * ACCUMULATORS * 4,), "float32", device)
    steps, seconds = _calibrated(kernels, "mma", device, halves, acc)
    tensor_cores = BLOCKS * WARPS * ACCUMULATORS * MMA_FLOP * steps / seconds / 1e9
    a = empty((COPY_ELEMENTS,), "float32", device)
    b = empty((COPY_ELEMENTS,), "float32", device)
    bandwidth = 2 * 4 * COPY_ELEMENTS / _best_seconds(kernels, "copy", device, a, b) / 1e9
    return MachineLimits(
        machine=key,
        cores=1,
        peak_gflops={1: {32: fp32}},
        bandwidth_gbs={1: bandwidth},
        measured_at=datetime.datetime.now().isoformat(timespec="seconds"),
        seconds=time.perf_counter() - start,
        path=str(machine_limits_path()),
        tensor_gflops=tensor_cores,
    )
