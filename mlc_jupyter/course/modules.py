"""``tvm.build`` as the book used it: a module that indexes by name, times and shows its source.

TVM 0.27 still has ``tvm.build`` (TensorIR only, deprecated) but its module has no
``imported_modules`` / ``get_source``, and ``tvm.compile``'s executable has no ``time_evaluator``.
:func:`build` goes through the project's :func:`~mlc_jupyter.compilation.build_module` (cache,
the project's checks, ``"llvm"`` = this CPU) and wraps the result in a :class:`CourseModule`
that answers both the stock module's API and the book's.
"""

from __future__ import annotations

from typing import Any

from ..compilation import build_module, device_for
from ..compilation.cached_build import Built
from ..compilation.call import call_arguments, compiled_symbol, prepare, relax_vm
from ..compilation.source import generated_source, in_memory
from ..errors import CallError
from ..tvm_compat import empty
from .nd import as_tensors, require_device
from .te_schedule import TESchedule
from .timer import OLD_DEFAULTS, evaluator

#: The old runtime's name for the entry of a build: the function of a one-function build (the
#: concept blog times ``rt_lib.time_evaluator("__tvm_main__", dev)``).
OLD_ENTRY = "__tvm_main__"


def build(
    inputs: Any,
    args: Any = None,
    target: Any = None,
    pipeline: Any = None,
    name: str = "default_function",
    **kwargs: Any,
) -> CourseModule:
    """Build ``inputs`` (PrimFunc, TensorIR or Relax module) for ``target`` like the book's
    tvm.build; ``tvm.build(s, [A, B, C], target)`` builds a legacy TE schedule (course mode's,
    :mod:`.te_schedule`) as the function ``name`` taking those tensors.

    ``tvm.build(mod, "llvm")`` (0.27's order) is read as the target. ``pipeline`` and other
    stock keywords are accepted and ignored: the project's build uses TVM's default pipeline for
    the target.
    """
    if args is not None and not isinstance(args, list | tuple):
        args, target = None, args if target is None else target
    if isinstance(inputs, TESchedule):
        mod, scratch = inputs.for_build(args, name)
        return CourseModule(build_module(mod, target), {name: scratch} if scratch else None)
    return CourseModule(build_module(inputs, target))


class CourseModule:
    """A built module with the stock API and the book's: ``lib["f"](a, b, c)``,
    ``lib.time_evaluator("f", dev)`` (on the caller's arrays), ``lib.imported_modules[0]
    .get_source()``.

    ``built`` is the project's :class:`~mlc_jupyter.compilation.Built`, so ``%mlc_time lib`` and
    ``%mlc_build`` know it. Other attributes are the stock runtime module's (``imports``,
    ``inspect_source``, ``export_library``...), then the executable's.
    """

    def __init__(self, built: Built, scratch: dict[str, list[Any]] | None = None) -> None:
        self.built = built
        #: function -> (shape, dtype) of the trailing parameters the module fills itself: the
        #: results a TE schedule's build computes that its arguments leave out
        self.scratch = scratch or {}
        self._scratch_tensors: dict[str, list[Any]] = {}

    def __getitem__(self, name: str) -> Any:
        """The function ``name``: checked arguments, TVM tensors or NumPy arrays, in place."""
        name = self.entry(name)
        function = self.built[name]
        if name not in self.scratch:
            return function
        return lambda *args: function(*args, *self.scratch_tensors(name))

    def get_function(self, name: str, *args: Any) -> Any:
        return self[name]

    def __call__(self, *args: Any) -> Any:
        """The old module call: its entry function (``rt_lib(a, b, c)`` in the TE tutorials)."""
        return self[OLD_ENTRY](*args)

    def scratch_tensors(self, name: str) -> list[Any]:
        """The tensors that receive ``name``'s results its caller does not pass (made once)."""
        if name not in self._scratch_tensors:
            device = device_for(self.built.target)
            self._scratch_tensors[name] = [
                empty(shape, dtype, device) for shape, dtype in self.scratch.get(name, [])
            ]
        return self._scratch_tensors[name]

    def entry(self, name: str) -> str:
        """``name``, with the old ``"__tvm_main__"`` read as the build's only function (or its
        ``main``)."""
        if name != OLD_ENTRY:
            return name
        functions = self.built.functions
        if len(functions) == 1:
            return functions[0]
        if "main" in functions:
            return "main"
        raise CallError(
            f'"{OLD_ENTRY}" names the entry of a build of one function; this build has '
            f"{', '.join(functions)}",
            hint=f'name the function: rt_lib.time_evaluator("{functions[0]}", tvm.cpu())',
        )

    def time_evaluator(
        self,
        func_name: str,
        dev: Any = None,
        number: int = OLD_DEFAULTS["number"],
        repeat: int = OLD_DEFAULTS["repeat"],
        min_repeat_ms: float = OLD_DEFAULTS["min_repeat_ms"],
        **options: Any,
    ) -> Any:
        """TVM's timer of ``func_name``, run on the arguments it is called with (outputs are
        written, as in the book): see :mod:`.timer`. A Relax build is timed through its VM."""
        require_device(dev, f"time_evaluator({func_name!r})")
        func_name = self.entry(func_name)
        built = self.built
        sig = prepare(built, func_name)
        device = dev if dev is not None else device_for(built.target)
        if sig.relax:
            module = relax_vm(built).module
            return evaluator(module, sig.name, device, vm_arguments, number, repeat,
                             min_repeat_ms, **options)  # fmt: skip

        scratch = self.scratch_tensors(sig.name) if sig.name in self.scratch else []

        def arguments(args: tuple[Any, ...]) -> tuple[list[Any], Any]:
            tensors, _, copy_back = call_arguments(built, sig, (*args, *scratch))
            return tensors, copy_back

        symbol = compiled_symbol(built.mod, sig.name)
        module = built.executable.mod
        return evaluator(module, symbol, device, arguments, number, repeat, min_repeat_ms,
                         **options)  # fmt: skip

    @property
    def imported_modules(self) -> list[Any]:
        """The device modules (CUDA, Metal ...) of the build, each with ``get_source()``."""
        return [_ImportedModule(m) for m in self.built.executable.mod.imports]

    def get_source(self, fmt: str = "") -> str:
        """The host code (LLVM IR for a CPU build)."""
        return str(in_memory(self.built).executable.mod.inspect_source(fmt))

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


def vm_arguments(args: tuple[Any, ...]) -> tuple[list[Any], Any]:
    """A Relax function's arguments as tensors (NumPy arrays copied, aligned); nothing to copy
    back: a Relax function returns its outputs."""
    return as_tensors(args), lambda: None
