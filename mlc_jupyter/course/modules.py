"""``tvm.build`` as the book used it: a module that indexes by name, times and shows its source.

TVM 0.27 still has ``tvm.build`` (TensorIR only, deprecated) but its module has no
``imported_modules`` / ``get_source``, and ``tvm.compile``'s executable has no ``time_evaluator``.
:func:`build` goes through the project's :func:`~mlc_jupyter.compilation.build_module` (cache,
the project's checks, ``"llvm"`` = this CPU) and wraps the result in a :class:`CourseModule`
that answers both the stock module's API and the book's.
"""

from __future__ import annotations

from typing import Any

from ..compilation import build_module
from ..compilation.cached_build import Built
from ..compilation.source import generated_source
from ..measure.race import time_module
from ..measure.timer import DEFAULT_MIN_REPEAT_MS, Sampling
from ..tvm_compat import benchmark_result
from .nd import require_device


def build(mod: Any, target: Any = None, pipeline: Any = None, **kwargs: Any) -> CourseModule:
    """Build ``mod`` (PrimFunc, TensorIR or Relax module) for ``target`` like the book's tvm.build.

    ``pipeline`` and other stock keywords are accepted and ignored: the project's build uses
    TVM's default pipeline for the target.
    """
    return CourseModule(build_module(mod, target))


class CourseModule:
    """A built module with the stock API and the book's: ``lib["f"](a, b, c)``,
    ``lib.time_evaluator("f", dev)``, ``lib.imported_modules[0].get_source()``.

    ``built`` is the project's :class:`~mlc_jupyter.compilation.Built`, so ``%mlc_time lib`` and
    ``%mlc_build`` know it. Other attributes are the stock runtime module's (``imports``,
    ``inspect_source``, ``export_library``...), then the executable's.
    """

    def __init__(self, built: Built) -> None:
        self.built = built

    def __getitem__(self, name: str) -> Any:
        """The function ``name``: checked arguments, TVM tensors or NumPy arrays, in place."""
        return self.built[name]

    def get_function(self, name: str, *args: Any) -> Any:
        return self.built[name]

    def time_evaluator(
        self,
        func_name: str,
        dev: Any = None,
        number: int | None = None,
        repeat: int | None = None,
        min_repeat_ms: float | None = None,
        **ignored: Any,
    ) -> Any:
        """A timer of ``func_name``: call it with the function's arguments.

        It measures like ``%mlc_time`` (calibrated calls for at least 50 ms, 5 repeats) unless
        ``number`` / ``repeat`` / ``min_repeat_ms`` say otherwise, and returns TVM's
        ``BenchmarkResult`` (``.mean``, ``.median``, ``.results``; ``print`` shows a summary).
        """
        require_device(dev, f"time_evaluator({func_name!r})")

        def timer(*args: Any) -> Any:
            timing = time_module(
                self.built,
                func_name=func_name,
                args=args or None,
                sampling=Sampling(
                    repeat or 5,
                    DEFAULT_MIN_REPEAT_MS if min_repeat_ms is None else min_repeat_ms,
                    number,
                ),
            )
            return benchmark_result(list(timing.results_s))

        return timer

    @property
    def imported_modules(self) -> list[Any]:
        """The device modules (CUDA, Metal ...) of the build, each with ``get_source()``."""
        return [_ImportedModule(m) for m in self.built.executable.mod.imports]

    def get_source(self, fmt: str = "") -> str:
        """The host code (LLVM IR for a CPU build)."""
        built = self.built
        if built.from_disk:  # a library loaded from disk keeps no LLVM module: compile again
            built = built.runtime.fresh_build(built)
        return str(built.executable.mod.inspect_source(fmt))

    def source(self, kind: str = "tir") -> str:
        return generated_source(self.built, kind)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        executable = self.__dict__["built"].executable
        module = getattr(executable, "mod", None)
        if module is not None and hasattr(module, name):
            return getattr(module, name)
        return getattr(executable, name)

    def __repr__(self) -> str:
        target = self.built.target.kind.name
        return f"<course module: {', '.join(self.built.functions)} built for {target}>"


class _ImportedModule:
    """A device module as the book used it: ``get_source()`` is 0.27's ``inspect_source()``."""

    def __init__(self, module: Any) -> None:
        self.module = module

    def get_source(self, fmt: str = "") -> str:
        return str(self.module.inspect_source(fmt))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.__dict__["module"], name)
