"""Building: ``tvm.compile`` (a Relax module's kernels in parallel parts), LLVM's view of the CPU
(name, triple, vector width), CUDA through nvcc, linking shared libraries. The TIR lowering
pipelines a build may name are in :mod:`.lowering`."""

from __future__ import annotations

import functools
import importlib.util
import os
import shlex
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from .namespaces import tvm
from .runtime import VM_KIND


def compile(  # noqa: A001
    mod: Any,
    target: Any,
    tir_pipeline: str | None = None,
    parts: int = 1,
    relax_pipeline: Any = None,
) -> Any:
    """Build a TIR or Relax module (``tvm.build`` / ``relax.build`` in the course), its kernels
    lowered by ``tir_pipeline`` (a name :func:`register_tir_pipeline` gave; TVM's default when
    ``None``), a Relax module's functions by ``relax_pipeline`` (a pass, such as
    :func:`.memory_plan.build_pipeline`; TVM's default when ``None``). The name mirrors
    ``tvm.compile``.

    A Relax module's kernels are lowered and compiled in up to ``parts`` parts, one thread each
    (:func:`_compile_relax_in_parts`; for a CPU target: the caller asks)."""
    _tvm = tvm()
    parts = min(parts, relax_kernel_count(mod))
    if parts > 1 and _can_compile_in_parts():
        return _compile_relax_in_parts(
            mod, _tvm.target.Target(target), tir_pipeline, parts, relax_pipeline
        )
    options: dict[str, Any] = {}
    if tir_pipeline is not None:
        options["tir_pipeline"] = tir_pipeline
    if relax_pipeline is not None:
        options["relax_pipeline"] = relax_pipeline
    return _tvm.compile(mod, target=target, **options)


def relax_kernel_count(mod: Any) -> int:
    """How many TIR kernels a Relax module holds (0 for anything else)."""
    _tvm = tvm()
    if not isinstance(mod, _tvm.IRModule):
        return 0
    functions = list(mod.functions.values())
    if not any(isinstance(f, _tvm.relax.Function) for f in functions):
        return 0
    return sum(isinstance(f, _tvm.tirx.PrimFunc) for f in functions)


#: The private steps of ``relax.build`` (in ``tvm.relax.vm_build``) a compile in parts takes.
_RELAX_BUILD_STEPS = ("_vmcodegen", "_filter_tir", "_auto_attach_system_lib_prefix", "_ffi_api")


def _can_compile_in_parts() -> bool:
    """Whether this TVM has the private steps of ``relax.build`` that
    :func:`_compile_relax_in_parts` takes: a TVM that renamed one builds on one core, as
    ``tvm.compile`` does, instead of failing every model's build."""
    from tvm.relax import vm_build  # deferred: imports TVM

    steps = all(hasattr(vm_build, name) for name in _RELAX_BUILD_STEPS)
    return steps and hasattr(vm_build._ffi_api, "VMLink")


def _compile_relax_in_parts(
    mod: Any, target: Any, tir_pipeline: str | None, parts: int, relax_pipeline: Any = None
) -> Any:
    """``relax.build`` with its kernels split into ``parts`` modules, each lowered and compiled
    by LLVM in a thread of its own (TVM's passes and LLVM's code generation release the GIL),
    then linked into one executable as ``relax.build`` links its one kernel module.

    TVM lowers and compiles a model's kernels one after another on one core; they are
    independent functions, and a cold default build spends most of its time there
    (``bench/bench_build_time.py``)."""
    from tvm import relax  # deferred: imports TVM
    from tvm.relax import vm_build  # deferred: imports TVM

    with target:
        mod = (relax_pipeline or relax.get_pipeline("default"))(mod)
    attrs = dict(mod.attrs) if mod.attrs else {}
    libraries = list(attrs.get("external_mods", []))
    params = dict(attrs.get("const_name_to_constant", {}))
    builder = relax.ExecBuilder()
    mod = vm_build._vmcodegen(builder, mod, "bytecode")
    kernels = vm_build._auto_attach_system_lib_prefix(vm_build._filter_tir(mod), target, None)
    items = sorted(kernels.functions.items(), key=lambda item: item[0].name_hint)
    groups = [tvm().IRModule(dict(items[i::parts]), attrs=kernels.attrs) for i in range(parts)]

    def build(group: Any) -> Any:
        return tvm().tirx.build(group, target=target, pipeline=tir_pipeline or "default")

    with ThreadPoolExecutor(parts, thread_name_prefix="mlc-compile") as pool:
        built = list(pool.map(build, groups))
    linked = vm_build._ffi_api.VMLink(builder, target, built[0], built[1:] + libraries, params)
    return relax.VMExecutable(linked)


def export_objects(executable: Any, workspace: str, pack_vm: bool = True) -> list[str] | None:
    """The object files of ``executable`` (a CPU build), written to ``workspace`` as
    ``export_library`` writes them before it links, each compiled module's in a thread of its
    own; ``None`` when one of its modules is not LLVM's, or this TVM lacks the private calls
    this makes (``export_library`` then exports it).

    ``pack_vm=False`` leaves a Relax build's VM (its bytecode and constants, a model's weights)
    out of the objects, for :func:`.runtime.write_vm` to write on its own: packing megabytes of
    weights into an object and linking it cost more than the kernels' objects. ``None`` then
    also when the VM imports anything but LLVM kernels (only ``export_library`` keeps those)."""
    from tvm.runtime import _ffi_api  # deferred: imports TVM

    module = executable.mod
    if not hasattr(module, "_collect_dso_modules") or not hasattr(
        _ffi_api, "ModulePackImportsToLLVM"
    ):
        return None
    modules = module._collect_dso_modules()
    if not modules or any(m.kind != "llvm" for m in modules):
        return None
    if not pack_vm and (
        module.kind != VM_KIND or any(m.kind != "llvm" or m.imports for m in module.imports)
    ):
        return None
    paths = [os.path.join(workspace, f"lib{index}.o") for index in range(len(modules))]
    jobs = list(zip(modules, paths, strict=True))
    last = modules[-1]
    if module.imports and pack_vm:  # the VM and other modules, packed as export_library does
        system_lib = bool(last.get_function("__tvm_is_system_module")())
        prefix = str(last.get_function("__tvm_get_system_lib_prefix")() or "")
        triple = str(last.get_function("_get_target_string")())
        packed = _ffi_api.ModulePackImportsToLLVM(module, system_lib, triple, prefix)
        paths.append(os.path.join(workspace, f"{prefix}devc.o"))
        jobs.append((packed, paths[-1]))
    with ThreadPoolExecutor(len(jobs), thread_name_prefix="mlc-export") as pool:
        list(pool.map(lambda job: job[0].write_to_file(job[1]), jobs))
    return paths


@functools.cache
def host_cpu() -> str:
    """The LLVM name of this machine's CPU (e.g. ``znver4``); TVM refuses ``"native"``."""
    return str(tvm().target.codegen.llvm_get_system_cpu())


def vector_bits(target: Any) -> int:
    """The width of one SIMD register of an LLVM target's CPU, in bits (128 when LLVM cannot
    say).

    Read from the CPU's features (``avx512f``: 512, ``avx``: 256): TVM 0.27's
    ``llvm_get_vector_width`` answers 512 for every x86 CPU, AVX2-only ones included, and a
    tile sized for 32 registers of 16 lanes spills on a CPU with 16 registers of 8.
    """
    from tvm.target import codegen

    try:
        features = {str(f) for f in codegen.llvm_get_cpu_features(target)}
    except Exception:  # noqa: BLE001 - a target LLVM does not know
        features = set()
    if "avx512f" in features:
        return 512
    if "avx" in features:
        return 256
    if features:
        return 128
    try:
        bits = int(codegen.llvm_get_vector_width(target))
    except Exception:  # noqa: BLE001 - a target LLVM does not know
        bits = 0
    return min(bits, 128) if bits > 0 else 128


def llvm_system_triple() -> str:
    """LLVM's triple of this machine (``x86_64-pc-linux-gnu``)."""
    from tvm.target import codegen

    return str(codegen.llvm_get_system_triple())


#: How TVMScript spells PTX's warp-level ``mma.sync`` (``T.ptx_mma`` before 0.27): a GPU's
#: tensor-core peak is measured with it (``measure/gpu_limits.py``).
PTX_MMA = "T.ptx_legacy.mma"

#: What TVM 0.27's CUDA module factory needs to compile a kernel when a GPU is present: the
#: ``tvm_callback_cuda_compile`` global registered by ``tvm.support.nvcc`` (``tvm.contrib.nvcc``
#: in the course), which uses NVRTC (the ``cuda-bindings`` package) unless this variable says nvcc.
CUDA_COMPILE_MODE_VAR = "TVM_CUDA_COMPILE_MODE"


def compiler_timeout_s() -> float:
    """How long one run of an external compiler (the C compiler, nvcc, ptxas) may take:
    ``$MLC_JUPYTER_COMPILER_TIMEOUT_S``, default 600."""
    return float(os.environ.get("MLC_JUPYTER_COMPILER_TIMEOUT_S", "600"))


class CompilerTimeoutError(RuntimeError):
    """An external compiler that ran past :func:`compiler_timeout_s` and was stopped."""


def run_compiler(cmd: list[str], name: str | None = None) -> subprocess.CompletedProcess:
    """Run a compiler command (an argument list, never a shell) with a time limit; its output
    captured as text. Raises :class:`CompilerTimeoutError` naming the compiler when it runs past the
    limit, ``FileNotFoundError`` when it is not installed."""
    limit = compiler_timeout_s()
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        raise CompilerTimeoutError(
            f"{name or Path(cmd[0]).name} did not finish within {limit:g} s and was stopped "
            "(raise $MLC_JUPYTER_COMPILER_TIMEOUT_S for a larger build)"
        ) from None


def nvcc_compile(source: str, target: Any, fmt: str = "ptx") -> bytes:
    """CUDA C++ -> ``fmt`` (``ptx``/``cubin``/``fatbin``) with nvcc and TVM's own flags (those
    of ``tvm.support.nvcc``), within :func:`compiler_timeout_s`.

    Raises ``RuntimeError`` with the source, ``Compilation error:`` and nvcc's output.
    """
    from tvm.support import nvcc

    arch = str(target.attrs.get("arch", "")) or "sm_80"
    version = arch[3:] if arch.startswith("sm_") else "80"
    ptxas = getattr(nvcc, "_ptxas_option_flags", lambda: ["-v"])()
    fast_math = [] if os.environ.get("TVM_CUDA_NVCC_NO_FAST_MATH") else ["--use_fast_math"]
    with tempfile.TemporaryDirectory(prefix="mlc-nvcc-") as tmp:
        src, out = Path(tmp) / "tvm_kernels.cu", Path(tmp) / f"tvm_kernels.{fmt}"
        src.write_text(source)
        cmd = [
            "nvcc", f"--{fmt}", "-O3", "-gencode", f"arch=compute_{version},code=sm_{version}",
            "-U__CUDA_NO_HALF_OPERATORS__", "-U__CUDA_NO_HALF_CONVERSIONS__",
            "-U__CUDA_NO_BFLOAT16_OPERATORS__", "-U__CUDA_NO_BFLOAT16_CONVERSIONS__",
            "-U__CUDA_NO_BFLOAT162_OPERATORS__", "-U__CUDA_NO_BFLOAT162_CONVERSIONS__",
            "--expt-relaxed-constexpr", "--expt-extended-lambda", *fast_math,
            f"--ptxas-options={','.join(ptxas)}", "-o", str(out), str(src),
        ]  # fmt: skip
        done = run_compiler(cmd, "nvcc")
        if done.returncode != 0:
            raise RuntimeError(f"{source}\nCompilation error:\n{done.stdout}{done.stderr}")
        return out.read_bytes()


def prefer_nvcc_without_nvrtc() -> None:
    """Let TVM compile CUDA kernels with nvcc when NVRTC's Python bindings are not installed.

    TVM 0.27 compiles with NVRTC by default and fails on a GPU machine without ``cuda-bindings``
    although nvcc is there. A user's own ``TVM_CUDA_COMPILE_MODE`` is kept.
    """
    if CUDA_COMPILE_MODE_VAR in os.environ or not shutil.which("nvcc"):
        return
    try:
        has_nvrtc = importlib.util.find_spec("cuda.bindings") is not None
    except ModuleNotFoundError:
        has_nvrtc = False
    if not has_nvrtc:
        os.environ[CUDA_COMPILE_MODE_VAR] = "nvcc"


def cuda_compiler() -> str:
    """The compiler TVM turns this process's CUDA kernels into GPU code with: ``"nvrtc"`` or
    ``"nvcc"``.

    NVRTC (in-process, TVM's default) when ``cuda-bindings`` is installed, else nvcc
    (:func:`prefer_nvcc_without_nvrtc`, applied here); a user's ``TVM_CUDA_COMPILE_MODE`` wins.
    """
    prefer_nvcc_without_nvrtc()
    return os.environ.get(CUDA_COMPILE_MODE_VAR, "nvrtc").strip().lower() or "nvrtc"


def link_shared(output: str, objects: list[str], options: Any = None) -> None:
    """Link object files into a shared library with the C compiler TVM's driver picks
    (``tvm.contrib.cc`` in the course), within :func:`compiler_timeout_s`; raises
    ``RuntimeError`` with the compiler's output when linking fails."""
    from tvm.support import cc

    extra = shlex.split(options) if isinstance(options, str) else list(options or [])
    cmd = [cc.get_cc() or "cc", "-shared", "-fPIC", "-o", output, *extra, *objects]
    done = run_compiler(cmd)
    if done.returncode != 0:
        raise RuntimeError(f"Compilation error:\n{done.stdout}{done.stderr}")
