"""The runtime: tensors (``tvm.nd`` in the course), thread pools, benchmark results, loading an
exported library, ending an RPC session, and the runtime code an exported loader carries."""

from __future__ import annotations

from typing import Any

from .namespaces import tvm


def tensor(array: Any, device: Any = None) -> Any:
    """A runtime tensor from a NumPy array (``tvm.nd.array`` in the course)."""
    return tvm().runtime.tensor(array, device=device)


def empty(shape: Any, dtype: str = "float32", device: Any = None) -> Any:
    """An uninitialised runtime tensor (``tvm.nd.empty`` in the course)."""
    return tvm().runtime.empty(shape, dtype=dtype, device=device)


def tensor_view(array: Any) -> Any:
    """A runtime tensor over ``array``'s own memory (no copy; DLPack): a kernel called with it
    writes ``array``. The memory must be contiguous and 64-byte aligned, as TVM's kernels assume."""
    return tvm().runtime.from_dlpack(array)


def tensor_type() -> type:
    """The runtime tensor class (``tvm.nd.NDArray`` in the course)."""
    return tvm().runtime.Tensor


def config_thread_pool(cores: int) -> None:
    """Resize the calling thread's TVM pool to ``cores`` workers."""
    tvm().get_global_func("runtime.config_threadpool")(0, cores)


def kernel_library(executable: Any, symbol: str) -> Any:
    """The compiled module of a Relax build that implements kernel ``symbol`` (``None`` for a
    name the VM runs itself): one of ``executable.mod.imports`` (``imported_modules`` before
    0.27), one per part where the build was compiled in parts and not loaded from disk."""
    vm_module = getattr(executable, "mod", executable)
    for library in vm_module.imports or [vm_module]:
        if library.implements_function(symbol):
            return library
    return None


def kernel_timer(library: Any, symbol: str, device: Any, repeat: int, cold: bool) -> Any:
    """TVM's own timer (C++, no Python between calls) over one kernel of ``library``: ``repeat``
    samples of one call each; ``cold`` flushes the CPU caches of every argument but the first
    before each sample (``cache_flush_cpu_non_first_arg``, MetaSchedule's CPU runner's choice:
    the weights come from memory, as they do once per model call)."""
    preproc = "cache_flush_cpu_non_first_arg" if cold else ""
    return library.time_evaluator(symbol, device, number=1, repeat=repeat, f_preproc=preproc)


def executable_type() -> type:
    """The class ``tvm.compile`` / ``relax.build`` return (``relax.VirtualMachine`` takes it)."""
    return tvm().runtime.Executable


def benchmark_result_type() -> type:
    """TVM's ``BenchmarkResult`` (what ``time_evaluator`` returns; ``print`` shows a summary)."""
    from tvm.runtime.module import BenchmarkResult  # deferred: imports TVM

    return BenchmarkResult


#: The module kind of a Relax build's VM (its bytecode and constants; the kernels are imports).
VM_KIND = "relax.VMExecutable"


def load_executable(path: str, relax: bool, vm: bytes | None = None) -> Any:
    """A shared library written by ``export_library``, loaded as what ``tvm.compile`` returns;
    with ``vm`` (what :func:`write_vm` wrote), the library holds a Relax build's kernels only and
    its VM comes from those bytes."""
    _tvm = tvm()
    if vm is not None:
        return with_kernels(_tvm.get_global_func(f"ffi.Module.load_from_bytes.{VM_KIND}")(vm), path)
    module = _tvm.runtime.load_module(path)
    return _tvm.relax.VMExecutable(module) if relax else _tvm.runtime.Executable(module)


def write_vm(executable: Any, path: str) -> None:
    """Write a Relax build's VM, its bytecode and constants without its kernels, to ``path``."""
    executable.mod.write_to_file(path)


def with_kernels(vm: Any, library: str) -> Any:
    """The Relax build of ``vm`` (an executable or its module) running the kernels of the
    kernels-only library at path ``library`` instead of those it has (it is changed in place):
    a fresh build's kernels, compiled in memory, would be compiled again on their first call."""
    kernels = tvm().runtime.load_module(library)
    module = getattr(vm, "mod", vm)
    module.clear_imports()
    module.import_module(kernels)
    return tvm().relax.VMExecutable(module)


def close_rpc_session(session: Any) -> None:
    """End an RPC session now, so its server is free again even while remote objects of the
    session are still referenced (a traceback keeps them); using them later raises."""
    session._sess["CloseRPCConnection"]()


#: What an exported loader runs on: TVM's runtime in TVM 0.27's spelling, as plain Python text
#: (the loader imports TVM, not mlc_jupyter).
LOADER_RUNTIME = '''
def _device(kind):
    return tvm.cpu(0) if kind in ("llvm", "c") else tvm.runtime.device(kind, 0)


def _machine(library, kind):
    """The Relax VM over the exported library, on the device of its target.

    TVM logs a line to stderr for each part of the library it loads; they are shown only when
    loading fails.
    """
    saved = os.dup(2)
    with tempfile.TemporaryFile() as log:
        os.dup2(log.fileno(), 2)
        try:
            return tvm.relax.VirtualMachine(tvm.runtime.load_module(library), _device(kind))
        except Exception:
            os.dup2(saved, 2)
            log.seek(0)
            sys.stderr.write(log.read().decode(errors="replace"))
            raise
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def _tensor(array, device):
    """An aligned TVM tensor holding a copy of a NumPy array."""
    return tvm.runtime.tensor(array, device=device)
'''
