"""Build a PrimFunc / TIR module / Relax module for a target, with an in-memory cache.

The cache key is the module's structural hash, the resolved target, the TVM version and whether
the build is checked; a hit is checked with structural equality and comes back at once with
``cached=True``. Before anything is built, TVM's static bounds analysis refuses a kernel that
provably indexes outside a buffer (:mod:`.bounds`); a checked build also tests every index at run
time, for what the analysis cannot decide.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import checked_builds, isolated_builds
from ..errors import BuildError, error_reason
from ..results import ImportedModel
from ..tvm_compat import compile as tvm_compile
from ..tvm_compat import (
    memory_plan,
    prefer_nvcc_without_nvrtc,
    register_tiles_pipeline,
    structural_equal,
    structural_hash,
    version,
)
from . import disk_cache
from .bounds import check_bounds
from .call import bound_function
from .checked import compile_checked
from .default_schedule import Progress, forget_prepared, has_operators, pack_weights, prepare_model
from .device_code import DeviceCode, device_code_of, failed_kernel_compile
from .isolate import isolated_function, refuse_isolation, start_worker
from .memory_cache import MemoryCache, footprint
from .signatures import (
    as_module,
    extern_symbols,
    gpu_bound_functions,
    is_relax,
    signatures,
    unbound_gpu_functions,
)
from .source import generated_source
from .targets import is_cpu, is_cuda, is_gpu_target, resolve_target


@dataclass(frozen=True)
class Built:
    """A built module (``%mlc_build`` / ``build_module``): call its functions like Python ones.

    ``built["mm_relu"](A, B)`` or ``built.mm_relu(A, B)`` with NumPy arrays, PyTorch tensors or
    TVM tensors; passing only the inputs of a destination-passing function returns the outputs.
    ``cached`` says the build came from the cache (``from_disk``: the one kept between kernel
    restarts), ``build_s`` what the (original) build cost;
    ``checked`` that every buffer index is tested at run time; ``isolated`` that its functions
    run in a worker process (:mod:`.isolate`: a crash fails the call, not the notebook).
    ``library`` is the shared library file it runs from (``""`` when it was not written to disk).
    ``mod`` is the module as built: for a Relax model, operators legalised, fused and scheduled.
    ``origin`` is the :class:`~mlc_jupyter.results.ImportedModel` it was built from (its example arguments and its
    PyTorch model are ``%mlc_time``'s default inputs and reference), else ``None``.
    """

    mod: Any
    target: Any
    executable: Any
    signatures: dict[str, Any]
    build_s: float
    cached: bool = False
    relax: bool = False
    extern_symbols: tuple[str, ...] = ()
    key: str = ""
    device_code: DeviceCode | None = None
    origin: Any = field(default=None, compare=False, repr=False)
    notes: tuple[str, ...] = ()
    #: What calls the build's functions, reads its code and builds it again
    #: (:class:`BuiltRuntime`), so the modules this one imports (:mod:`.source`) can rebuild one.
    runtime: Any = field(default=None, compare=False, repr=False)
    checked: bool = False
    from_disk: bool = False
    isolated: bool = False
    library: str = ""

    @property
    def functions(self) -> list[str]:
        return list(self.signatures)

    def __getitem__(self, name: str) -> Any:
        return self.runtime.bound_function(self, name)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name not in self.__dict__.get("signatures", {}):
            raise AttributeError(name)
        return self[name]

    def __call__(self, *args: Any) -> Any:
        """Call the module's only (or ``main``) function."""
        return self.runtime.bound_function(self, None)(*args)

    def source(self, kind: str = "tir") -> str:
        """Generated code: ``tir``, ``llvm``, ``asm``, ``cuda`` or ``ptx``."""
        return self.runtime.generated_source(self, kind)


class BuiltRuntime:
    """What a :class:`Built` calls for its functions and generated code."""

    bound_function = staticmethod(
        lambda built, name: (isolated_function if built.isolated else bound_function)(built, name)
    )
    generated_source = staticmethod(generated_source)
    fresh_build = staticmethod(lambda built: fresh_build(built))


_CACHE = MemoryCache()


def memory_cache() -> MemoryCache:
    """This kernel's builds kept in memory (to show its size; :func:`clear_cache` clears it)."""
    return _CACHE


@functools.cache
def code_fingerprint() -> str:
    """A digest of this package's Python sources. A model's kernels are scheduled by this code,
    not by the module hashed, so a build made by other code (an upgrade, an edited schedule) is
    never served from the disk cache."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha1(usedforsecurity=False)
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def cache_key(mod: Any, target: Any, checked: bool = False) -> str:
    """``hash|target|tvm version|code fingerprint[|checked]`` for an IRModule and a resolved
    target."""
    key = f"{structural_hash(mod):x}|{target}|{version()}|{code_fingerprint()}"
    return key + ("|checked" if checked else "")


def clear_cache(*, disk: bool = True) -> None:
    """Forget every cached build: in this kernel's memory (the models prepared and packed for
    building too) and, unless ``disk=False``, on disk."""
    _CACHE.clear()
    forget_prepared()
    if disk:
        disk_cache.flush()
        disk_cache.evict(0)


#: How the kernels of a Relax model's operators are scheduled before building.
SCHEDULES = ("default", "none")


def build_module(
    mod: Any,
    target: Any = None,
    *,
    force: bool = False,
    checked: bool | None = None,
    isolate: bool | None = None,
    persist: bool = True,
    schedule: str = "default",
    on_progress: Progress | None = None,
) -> Built:
    """Build ``mod`` (PrimFunc, TensorIR IRModule or Relax module) for ``target``.

    ``checked`` makes every buffer index be tested at run time, so a bad index raises
    :class:`~mlc_jupyter.errors.OutOfBoundsError` instead of corrupting memory (``None``: the
    session's setting, :func:`mlc_jupyter.config.checked_builds`; CPU targets only).
    ``isolate`` runs the built functions in a worker process (:mod:`.isolate`), so a kernel that
    crashes fails its call with :class:`~mlc_jupyter.errors.KernelCrashError` instead of killing
    the process (``None``: the session's setting, :func:`mlc_jupyter.config.isolated_builds`,
    which leaves what it cannot isolate, Relax and GPU builds, in process with a note saying
    so; ``True`` refuses them). CPU builds of TIR modules only.
    CPU builds are also kept on disk (:mod:`.disk_cache`, unless ``persist=False``), so the
    same build in a restarted kernel is a hit (``cached=True``, ``from_disk=True``).
    Returns a :class:`Built` whose functions can be called directly.
    The kernels TVM makes from a Relax module's operators get default schedules
    (:mod:`.default_schedule`); ``schedule="none"`` builds them as ``tvm.compile`` does.
    ``on_progress(stage, done, total)`` hears about the long steps.
    Raises ``OutOfBoundsError`` when TVM proves an index leaves its buffer (nothing is built),
    ``BuildError`` for a GPU kernel with unbound loops and for TVM build failures.
    """
    if isolate:  # refused before anything is built
        try:
            module = as_module(mod)
        except TypeError:
            module = None  # the build says why
        if module is not None:
            where = resolve_target(target if target is not None else made_for(mod))
            refuse_isolation(is_relax(module), where, explicit=True)
    built = _build(mod, target, force, checked, persist, schedule, on_progress)
    asked = isolated_builds() if isolate is None else bool(isolate)
    if not asked:
        return dataclasses.replace(built, isolated=False) if built.isolated else built
    why_not = refuse_isolation(built.relax, built.target, explicit=isolate is not None)
    if why_not:
        return dataclasses.replace(built, isolated=False, notes=(*built.notes, why_not))
    start_worker()  # its start overlaps the user's next cell
    return dataclasses.replace(built, isolated=True)


def _build(
    mod: Any,
    target: Any,
    force: bool,
    checked: bool | None,
    persist: bool,
    schedule: str,
    on_progress: Progress | None,
) -> Built:
    """:func:`build_module` without isolation: the build, cached in memory and on disk."""
    if schedule not in SCHEDULES:
        raise BuildError(f"unknown schedule {schedule!r}", hint="use default or none")
    origin = mod if isinstance(mod, ImportedModel) else getattr(mod, "origin", None)
    if target is None:
        target = made_for(mod)
    try:
        mod = as_module(mod)
    except TypeError as err:
        raise BuildError(str(err)) from None
    target = resolve_target(target)
    notes: tuple[str, ...] = ()
    if schedule == "default" and is_relax(mod) and has_operators(mod):
        prepared = prepare_model(mod, target, on_progress)
        mod, notes = prepared.mod, prepared.notes()
    if is_relax(mod) and not is_gpu_target(target):
        mod = pack_weights(mod)
    checked = checked_builds() if checked is None else bool(checked)
    key = cache_key(mod, target, checked)
    hit = _CACHE.get(key)
    if hit is not None and not force and structural_equal(hit.mod, mod):
        return dataclasses.replace(
            hit, cached=True, origin=origin or hit.origin, notes=notes or hit.notes
        )
    relax = is_relax(mod)
    on_disk = persist and is_cpu(target)
    if on_disk and not force:
        found = disk_cache.load(key, mod, relax)
        if found is not None:
            executable, old_build_s, library = found
            loaded = _remember(
                mod, target, executable, old_build_s, relax, key, checked, notes=notes,
                from_disk=True, library=library,
            )  # fmt: skip
            return dataclasses.replace(loaded, origin=origin)
    if is_gpu_target(target) and not relax:
        unbound = unbound_gpu_functions(mod)
        if unbound:
            raise BuildError(
                f"{', '.join(unbound)}: loops are not bound to blockIdx/threadIdx, so TVM would "
                f"build a host function instead of a {target.kind.name} kernel",
                hint="split the loop and sch.bind(outer, 'blockIdx.x'); sch.bind(inner, "
                "'threadIdx.x')",
            )
    if checked and is_gpu_target(target):
        raise BuildError(
            "checked builds run on the CPU only", hint="build without --checked for a GPU"
        )
    check_bounds(mod)
    if is_cuda(target):
        prefer_nvcc_without_nvrtc()  # with a GPU present, TVM compiles the kernels itself
    start = time.perf_counter()
    if on_progress is not None:
        on_progress("compiling", 0, 1)
    try:
        if checked:
            executable = compile_checked(mod, target)
        else:
            executable = tvm_compile(
                mod,
                target,
                tir_pipeline=tir_pipeline(target),
                parts=compile_parts(target),
                relax_pipeline=relax_build_pipeline(target),
            )
    except Exception as err:  # noqa: BLE001 - TVM raises many types; show one line
        kernel_error = failed_kernel_compile(err)
        if kernel_error is not None:
            raise kernel_error from None
        if not is_gpu_target(target) and gpu_bound_functions(mod):
            raise gpu_kernels_for_cpu(mod, target) from None
        raise BuildError(f"TVM could not build the module: {error_reason(err)}") from None
    build_s = time.perf_counter() - start
    library = ""
    if on_disk:
        stored = disk_cache.store(key, mod, executable, build_s, relax)
        if stored is not None:
            executable, library = stored
    device_code = device_code_of(executable, target) if is_cuda(target) else None
    built = _remember(
        mod, target, executable, build_s, relax, key, checked, device_code=device_code,
        notes=notes, library=library,
    )  # fmt: skip
    return dataclasses.replace(built, origin=origin)


#: The most threads a build compiles its kernels in.
MAX_COMPILE_PARTS = 4


def compile_parts(target: Any) -> int:
    """How many parts a build for ``target`` compiles a model's kernels in: one per core of this
    process (at most :data:`MAX_COMPILE_PARTS`) for a CPU, one for a GPU (its kernels' host code
    is small; nvcc or NVRTC compile the rest)."""
    if not is_cpu(target):
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(cores or 1, MAX_COMPILE_PARTS))


def tir_pipeline(target: Any) -> str | None:
    """The TIR lowering of a build for ``target``: for a CPU, TVM's default with each register
    tile's accumulators kept in registers (:func:`.tvm_compat.register_tiles_pipeline`); TVM's
    default (``None``) for a GPU, whose ``local`` buffers are registers already. The tuner
    compiles its candidates with the same lowering, so that it times what a build runs."""
    return register_tiles_pipeline() if is_cpu(target) else None


def relax_build_pipeline(target: Any) -> Any:
    """The Relax build pipeline of a build for ``target``: for a CPU, TVM's default with each
    planned tensor at the middle of its storage (:mod:`.tvm_compat.memory_plan`: the cores'
    halves of every tensor in a storage meet at one byte, so neither core writes what the other
    holds); TVM's default (``None``) for a GPU, which has no such halves."""
    return memory_plan.build_pipeline() if is_cpu(target) else None


def made_for(obj: Any) -> Any:
    """The target ``obj`` was made for, when it says (``None``: the configured default).

    A tuning result (``MM_tuned``), a build (``MM_lib``) and a trace replay's result keep the
    target their kernels were scheduled for; building them for another target is what the
    user did not ask for (a CUDA-tuned kernel built for the CPU fails deep in TVM).
    """
    target = getattr(obj, "target", None)
    return target if target is not None and not callable(target) else None


def gpu_kernels_for_cpu(mod: Any, target: Any) -> BuildError:
    """The error for GPU-bound kernels built for a CPU target (TVM: "Unknown device id")."""
    names = gpu_bound_functions(mod)
    return BuildError(
        f"{', '.join(names[:3])}{' ...' if len(names) > 3 else ''}: loops are bound to "
        f"blockIdx/threadIdx, so these are GPU kernels and cannot be built for {target.kind.name}",
        hint="build for the GPU they were scheduled for: --target cuda",
    )


def _remember(
    mod: Any,
    target: Any,
    executable: Any,
    build_s: float,
    relax: bool,
    key: str,
    checked: bool,
    *,
    device_code: Any = None,
    from_disk: bool = False,
    notes: tuple[str, ...] = (),
    library: str = "",
) -> Built:
    """The :class:`Built` for a build (fresh, or loaded from disk), kept in memory too."""
    built = Built(
        mod=mod,
        target=target,
        executable=executable,
        signatures=signatures(mod),
        build_s=build_s,
        relax=relax,
        extern_symbols=tuple(sorted(extern_symbols(mod))),
        key=key,
        device_code=device_code,
        notes=notes,
        runtime=BuiltRuntime(),
        checked=checked,
        from_disk=from_disk,
        library=library,
    )
    _CACHE.put(key, built, footprint(mod))
    return dataclasses.replace(built, cached=True) if from_disk else built


def fresh_build(built: Built) -> Built:
    """``built`` compiled again in this kernel: what a build loaded from disk cannot show (its
    LLVM IR and assembly) comes from this one; it is not written to disk."""
    return build_module(
        built.mod, built.target, force=True, checked=built.checked, isolate=False, persist=False
    )
