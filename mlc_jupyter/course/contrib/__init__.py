"""``tvm.contrib.utils`` and ``tvm.contrib.clang`` of the course (TVM 0.27: ``tvm.support``).

``clang.create_llvm`` needs a clang binary, which a Debian machine usually lacks; the course shim
compiles the same C/C++ code with the C compiler that is present instead (see :mod:`.clang`).
"""

from . import clang, utils

__all__ = ["clang", "utils"]
