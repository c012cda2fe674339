"""CUDA kernels compiled to GPU code at build time, on any machine with the CUDA toolkit.

Without a GPU driver TVM 0.27 keeps only the CUDA source of a build (the GPU compiler would run
when the module is loaded on a GPU), so a kernel the compiler rejects would fail only there. Here
nvcc turns the source into PTX (with TVM's own flags) and ptxas the PTX into a cubin for the
target's architecture; ptxas also reports each kernel's registers, shared memory and spills.
A rejected kernel becomes a :class:`~mlc_jupyter.errors.KernelCompileError` that names the kernel
and the line of the CUDA source, whichever compiler (nvcc, ptxas, TVM's own NVRTC) found it.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import BuildError, KernelCompileError, error_reason
from ..tvm_compat import CompilerTimeoutError, nvcc_compile, run_compiler
from .source import cuda_module
from .targets import gpu_present

_NVCC_ERROR = re.compile(r"^[^\n]*?\((?P<line>\d+)\): (?:catastrophic )?error: (?P<msg>.+)$", re.M)
_PTXAS_ERROR = re.compile(r"^ptxas (?:fatal|error)\s*: (?P<msg>.+)$", re.M)
_NVCC_FATAL = re.compile(r"^nvcc fatal\s*: (?P<msg>.+)$", re.M)
_ENTRY = re.compile(r"[Ee]ntry function '(?P<name>\w+)'")
_KERNEL = re.compile(r"__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s+)?(?P<name>\w+)\s*\(")
_QUOTED = re.compile(r"\"(?P<word>[A-Za-z_]\w*)\"")
_USAGE = re.compile(
    r"Function properties for (?P<name>\w+)\s+(?P<stack>\d+) bytes stack frame, "
    r"(?P<stores>\d+) bytes spill stores, (?P<loads>\d+) bytes spill loads\s+"
    r"ptxas info\s*: Used (?P<regs>\d+) registers(?:, used \d+ barriers)?"
    r"(?:, (?P<smem>\d+) bytes smem)?"
)

_HEX = re.compile(r"\b0x([0-9a-fA-F]+)\b")
#: Hints by what the compiler's message says (the first that matches).
HINTS = (
    ("too much shared data", "use smaller tiles: a block's static shared memory is 48 KB at most"),
    ("is undefined", "a T.call_extern / T.call_pure_extern name must be a CUDA device function"),
    ("", "read the generated kernel: %mlc_build ... --show cuda"),
)


@dataclass(frozen=True)
class KernelUsage:
    """What one compiled GPU kernel uses per thread and per block (ptxas's report)."""

    name: str
    registers: int
    shared_bytes: int
    stack_bytes: int = 0
    spill_bytes: int = 0

    def describe(self) -> str:
        text = f"{self.name}: {self.registers} registers, {self.shared_bytes} B shared"
        if self.spill_bytes:
            text += f", {self.spill_bytes} B spilled"
        return text


@dataclass(frozen=True)
class DeviceCode:
    """The GPU code of a CUDA build, compiled at build time (``Built.device_code``).

    ``cubin`` is empty when nothing was compiled; ``note`` then says why (no nvcc, an
    architecture this nvcc does not know, or TVM compiled it itself for the GPU present).
    """

    arch: str
    compiler: str = ""
    ptx: str = ""
    cubin: bytes = field(default=b"", repr=False)
    kernels: tuple[KernelUsage, ...] = ()
    compile_s: float = 0.0
    note: str = ""

    @property
    def compiled(self) -> bool:
        return bool(self.cubin)

    def summary(self) -> str:
        if not self.compiled:
            return f"device code: {self.note}"
        usage = "; ".join(k.describe() for k in self.kernels)
        return f"device code: {self.arch} cubin by {self.compiler}" + (
            f" ({usage})" if usage else ""
        )


def _hint(detail: str) -> str:
    return next(hint for key, hint in HINTS if key in detail)


@functools.cache
def find_nvcc() -> str | None:
    """The path of nvcc (``PATH``, else ``$CUDA_PATH/bin``), or ``None``."""
    found = shutil.which("nvcc")
    if found:
        return found
    home = os.environ.get("CUDA_PATH") or os.environ.get("CUDA_HOME")
    candidate = Path(home or "/usr/local/cuda") / "bin" / "nvcc"
    return str(candidate) if candidate.is_file() else None


@functools.cache
def toolkit(nvcc: str) -> tuple[str, tuple[str, ...]]:
    """``("nvcc 13.0", ("sm_75", "sm_80", ...))``: nvcc's release and the GPU codes it builds."""
    version = run_compiler([nvcc, "--version"], "nvcc").stdout
    release = re.search(r"release (\d+\.\d+)", version)
    codes = run_compiler([nvcc, "--list-gpu-code"], "nvcc").stdout
    return f"nvcc {release.group(1) if release else '?'}", tuple(codes.split())


def _base_arch(arch: str) -> str:
    """``sm_90a`` -> ``sm_90`` (nvcc lists the base codes; the suffixed ones come with them)."""
    return arch.rstrip("abf") if arch[-1:].isalpha() else arch


def compile_kernels(source: str, target: Any) -> DeviceCode:
    """Compile a build's CUDA ``source`` for ``target``'s architecture (PTX, then a cubin).

    Returns a :class:`DeviceCode` with a ``note`` instead of code when nvcc is missing or does
    not know the architecture. Raises :class:`KernelCompileError` when a kernel is rejected.
    """
    arch = str(target.attrs.get("arch", ""))
    nvcc = find_nvcc()
    if nvcc is None:
        return DeviceCode(arch, note="not compiled: nvcc not found (install the CUDA toolkit)")
    try:
        compiler, codes = toolkit(nvcc)
    except CompilerTimeoutError as err:
        raise BuildError(str(err)) from None
    if _base_arch(arch) not in codes:
        return DeviceCode(
            arch,
            compiler,
            note=f"not compiled: {compiler} cannot build for {arch or 'this target'}"
            f" (it builds {codes[0]} to {codes[-1]})",
        )
    start = time.perf_counter()
    try:
        ptx = nvcc_compile(source, target, "ptx")
        cubin, report = _assemble(ptx, arch, Path(nvcc).with_name("ptxas"))
    except CompilerTimeoutError as err:
        raise BuildError(str(err), hint="a smaller kernel, or a longer limit") from None
    except RuntimeError as err:
        raise kernel_error(source, str(err), compiler) from None
    if not cubin:
        raise kernel_error(source, report, "ptxas")
    return DeviceCode(
        arch,
        compiler,
        ptx=ptx.decode(),
        cubin=cubin,
        kernels=kernel_usage(report),
        compile_s=time.perf_counter() - start,
    )


def _assemble(ptx: bytes, arch: str, ptxas: Path) -> tuple[bytes, str]:
    """``ptxas -v``: the cubin (empty on failure) and ptxas's report."""
    with tempfile.TemporaryDirectory(prefix="mlc-ptxas-") as tmp:
        src, out = Path(tmp) / "kernels.ptx", Path(tmp) / "kernels.cubin"
        src.write_bytes(ptx)
        cmd = [str(ptxas) if ptxas.is_file() else "ptxas", f"-arch={arch}", "-v"]
        done = run_compiler([*cmd, "-o", str(out), str(src)], "ptxas")
        report = done.stderr + done.stdout
        return (out.read_bytes() if done.returncode == 0 and out.is_file() else b""), report


def kernel_usage(report: str) -> tuple[KernelUsage, ...]:
    """Registers, shared memory, stack and spills of each kernel in a ``ptxas -v`` report."""
    found = []
    for match in _USAGE.finditer(report):
        found.append(
            KernelUsage(
                name=match["name"],
                registers=int(match["regs"]),
                shared_bytes=int(match["smem"] or 0),
                stack_bytes=int(match["stack"]),
                spill_bytes=int(match["stores"]) + int(match["loads"]),
            )
        )
    return tuple(found)


def _nvrtc_line(source: str, line: int) -> int:
    """The source line of NVRTC's ``line``: TVM drops ``#include <cuda.h>`` before NVRTC."""
    kept = [
        n for n, text in enumerate(source.splitlines(), 1) if text.strip() != "#include <cuda.h>"
    ]
    return kept[line - 1] if 0 < line <= len(kept) else line


def _kernel_at(lines: list[str], line: int) -> str:
    """The name of the kernel whose definition encloses ``line`` (1-based) of the CUDA source."""
    for text in reversed(lines[:line]):
        match = _KERNEL.search(text)
        if match:
            return match["name"]
    return ""


def kernel_error(source: str, message: str, compiler: str = "nvcc") -> KernelCompileError:
    """A :class:`KernelCompileError` for a compiler's ``message`` about CUDA ``source``.

    ``message`` is nvcc's output, a ``ptxas -v`` report, or the text of the ``RuntimeError``
    that TVM's compile callback raised (the source, then ``Compilation error:`` and the output;
    or ``NVRTC compilation failed:`` and NVRTC's log).
    """
    output = message.split("Compilation error:", 1)[-1]
    nvrtc = "NVRTC compilation failed" in output
    if nvrtc:
        compiler, output = "NVRTC", output.split("NVRTC compilation failed", 1)[1]
    lines = source.splitlines()
    found = _NVCC_ERROR.search(output)
    if found:
        line = int(found["line"])
        line = _nvrtc_line(source, line) if nvrtc else line
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        kernel = _kernel_at(lines, line)
        detail = found["msg"].strip()
        where = f"kernel {kernel}" if kernel else "the generated CUDA code"
        return KernelCompileError(
            f"{compiler} rejected {where}: {detail}",
            kernel=kernel,
            cuda_line=line,
            cuda_text=text,
            words=tuple(dict.fromkeys(m["word"] for m in _QUOTED.finditer(detail))),
            hint=_hint(detail),
        )
    found = _PTXAS_ERROR.search(output) or _NVCC_FATAL.search(output)
    detail = found["msg"].strip() if found else error_reason(output)
    detail = _HEX.sub(lambda m: str(int(m[1], 16)), detail)  # ptxas counts bytes in hex
    entry = _ENTRY.search(detail)
    kernel = entry["name"] if entry else ""
    where = f"kernel {kernel}" if kernel else "the generated CUDA code"
    return KernelCompileError(
        f"{compiler} rejected {where}: {detail}", kernel=kernel, hint=_hint(detail)
    )


def failed_kernel_compile(err: BaseException) -> KernelCompileError | None:
    """The :class:`KernelCompileError` in an error TVM's own CUDA compile raised, else ``None``.

    With a GPU present TVM compiles kernels itself while building (nvcc or NVRTC).
    """
    text = str(err)
    if "Compilation error:" in text:
        return kernel_error(text.split("Compilation error:", 1)[0], text)
    if "NVRTC compilation failed" in text:
        return kernel_error("", text)
    return None


def device_code_of(executable: Any, target: Any) -> DeviceCode | None:
    """The GPU code of a build for a CUDA ``target`` (``None`` when it has no CUDA kernels)."""
    module = cuda_module(executable)
    if module is None:
        return None
    arch = str(target.attrs.get("arch", ""))
    if gpu_present(target):
        return DeviceCode(arch, note="compiled by TVM for the GPU of this machine when it built")
    return compile_kernels(str(module.inspect_source()), target)
