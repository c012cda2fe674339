"""The threads tuning runs on: one measuring thread per core count, a compile pool, CPU affinity.

TVM's thread pool is per thread, so candidates are timed on a kernel-lifetime thread whose pool
has the target's ``num-cores`` workers; compiling happens on a separate pool so that no compile
runs on the measuring thread. Importing this module does not import TVM.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ...compilation import is_cpu
from ...tvm_compat import config_thread_pool, use_all_cores

_MEASURERS: dict[int, ThreadPoolExecutor] = {}
_COMPILERS: dict[int, ThreadPoolExecutor] = {}
_POOLS_LOCK = threading.Lock()


def _size_thread_pool(cores: int) -> None:
    """Give the calling thread a TVM thread pool of ``cores`` workers.

    TVM's pool is per thread; its size comes from ``TVM_NUM_THREADS``, which TVM also reads when
    it launches parallel work, so the variable stays set (:func:`~mlc_jupyter.tvm_compat.
    use_all_cores`) and only a different core count reconfigures this thread's pool.
    """
    use_all_cores()
    if os.environ["TVM_NUM_THREADS"] != str(cores):
        config_thread_pool(cores)


def on_measure_thread(cores: int, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run ``fn`` on the kernel-lifetime measuring thread whose TVM pool has ``cores`` workers."""
    cores = max(1, int(cores))
    with _POOLS_LOCK:
        executor = _MEASURERS.get(cores)
        if executor is None:
            executor = ThreadPoolExecutor(
                1, thread_name_prefix=f"mlc-measure-{cores}", initializer=_size_thread_pool,
                initargs=(cores,),
            )  # fmt: skip
            _MEASURERS[cores] = executor
    return executor.submit(fn, *args, **kwargs).result()


def compile_pool(cores: int) -> ThreadPoolExecutor:
    """The kernel-lifetime pool of ``cores`` threads that compiles candidates.

    ``tvm.compile`` releases the GIL: two threads compile twice as many candidates a second.
    """
    cores = max(1, int(cores))
    with _POOLS_LOCK:
        executor = _COMPILERS.get(cores)
        if executor is None:
            executor = ThreadPoolExecutor(cores, thread_name_prefix="mlc-compile")
            _COMPILERS[cores] = executor
    return executor


def unpin_this_thread() -> None:
    """Let the calling thread (and the search threads it starts) use every CPU again.

    Running a parallel kernel on a thread makes TVM pin that thread to one core; the search's
    and XGBoost's threads inherit the mask, so after a ``%mlc_time`` in the same kernel the
    whole search would share one core.
    """
    with contextlib.suppress(AttributeError, OSError, ValueError):
        os.sched_setaffinity(0, range(os.cpu_count() or 1))


def target_cores(target: Any) -> int:
    """The ``num-cores`` a CPU target asks for (1 when it does not say)."""
    return int(target.attrs["num-cores"]) if "num-cores" in target.attrs else 1


def host_cores(target: Any) -> int:
    """The host threads that search, train the cost model and compile for ``target``.

    A CPU target's ``num-cores`` (its kernels are measured on those cores); every host core for
    a GPU target, whose ``num-cores`` says nothing about the host: its search, which lowers
    each mutant to check it against the GPU's limits, is most of a GPU tune's time.
    """
    if is_cpu(target):
        return target_cores(target)
    return os.cpu_count() or 1
