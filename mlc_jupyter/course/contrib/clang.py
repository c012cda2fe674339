"""``clang.create_llvm(code)`` of the course, with the C compiler that is present.

The book (section 6.2) compiles a C micro-kernel (``tmm16``) to LLVM IR with clang and hands the
IR to ``sch.annotate(loop, "pragma_import_llvm", ir)``, so that the tensorized kernel's call to
``tmm16`` is linked in. Without clang, this shim compiles the same code with the system's C/C++
compiler (gcc on Debian) into a shared library, loads it into this process with global symbols
(so TVM's JIT resolves ``tmm16`` from it), and returns an LLVM module with nothing to import:
the pragma is satisfied and the symbol comes from the loaded library. A re-run with the same code
reuses the library; the process keeps the first definition of a symbol, so an *edited* kernel
needs a kernel restart.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import uuid
from pathlib import Path
from typing import Any

from ...config import cache_subdir
from ...errors import BuildError
from ...tvm_compat import CompilerTimeoutError, run_compiler

_LOADED: dict[Path, ctypes.CDLL] = {}


def _compiler(cplusplus: bool) -> str:
    names = ("g++", "c++", "clang++") if cplusplus else ("gcc", "cc", "clang")
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    raise BuildError(
        "no C compiler found to compile the kernel's C code (tvm.contrib.clang needs clang)",
        hint="install one: apt-get install gcc g++",
    )


def _source(inputs: Any) -> str:
    items = [inputs] if isinstance(inputs, str) else list(inputs)
    texts = []
    for item in items:
        path = Path(item) if "\n" not in item and len(item) < 4096 else None
        texts.append(path.read_text() if path is not None and path.is_file() else item)
    return "\n".join(texts)


def compile_shared(code: str, options: list[str] | None = None) -> Path:
    """Compile C/C++ ``code`` into a shared library in the cache; return its path."""
    cplusplus = 'extern "C"' in code or "#include <c" in code
    flags = ["-O2", "-fPIC", "-shared", *(options or [])]
    compiler = _compiler(cplusplus)
    key = hashlib.sha1(f"{compiler}|{flags}|{code}".encode(), usedforsecurity=False).hexdigest()
    folder = cache_subdir("course", "kernels")
    library = folder / f"kernel-{key[:16]}.so"
    if library.exists():
        return library
    src = folder / f"kernel-{key[:16]}.{'cc' if cplusplus else 'c'}"
    src.write_text(code)
    # the compiler writes a name of its own; the library appears under its name in one rename
    # once whole, so a compile that is killed never leaves a truncated library to load
    partial = folder / f".kernel-{key[:16]}-{os.getpid()}-{uuid.uuid4().hex[:8]}.so"
    try:
        try:  # the user's own kernel code, compiled as the book does
            done = run_compiler([compiler, *flags, str(src), "-o", str(partial)])
        except CompilerTimeoutError as err:
            raise BuildError(str(err)) from None
        if done.returncode != 0:
            errors = [line for line in done.stderr.splitlines() if "error" in line]
            raise BuildError(
                f"{Path(compiler).name} could not compile the kernel: "
                f"{(errors or done.stderr.splitlines() or ['unknown error'])[0]}",
                hint="fix the C code in the string passed to clang.create_llvm",
            )
        os.replace(partial, library)
    finally:
        partial.unlink(missing_ok=True)
    return library


def load_global(library: Path) -> None:
    """Load ``library`` so that its symbols resolve for TVM's JIT (``RTLD_GLOBAL``)."""
    if library not in _LOADED:
        _LOADED[library] = ctypes.CDLL(str(library), mode=ctypes.RTLD_GLOBAL)


def create_llvm(
    inputs: Any, output: str | None = None, options: list[str] | None = None, cc: Any = None
) -> str:
    """Compile ``inputs`` (code or source files), load it, and return an empty LLVM module.

    The returned text is valid LLVM IR for ``pragma_import_llvm``; the functions themselves come
    from the loaded library. ``output``, if given, receives the same text.
    """
    library = compile_shared(_source(inputs), options)
    load_global(library)
    text = f"; compiled with the system C compiler into {library} and loaded into this process\n"
    if output:
        Path(output).write_text(text)
    return text
