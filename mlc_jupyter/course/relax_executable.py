"""``relax.build`` as the book used it, built through the project like ``tvm.build``.

``relax.build(mod, target)`` goes through :func:`~mlc_jupyter.compilation.build_module`: the
same disk cache, the out-of-bounds check before anything runs, ``%mlc_checked``. It returns
TVM 0.27's own ``Executable`` of that build (a :class:`CourseExecutable`), so
``relax.VirtualMachine(ex, dev)`` is TVM's unchanged: calls, ``set_input`` / ``invoke_stateful``
/ ``get_outputs`` and ``vm.module.time_evaluator`` behave as in the book (TVM's timer runs the
function on the caller's arrays, with the old numbers).
"""

from __future__ import annotations

from typing import Any

from .. import tvm_compat
from ..compilation import build_module
from ..compilation.cached_build import Built


class CourseExecutable(tvm_compat.executable_type()):  # type: ignore[misc]
    """TVM 0.27's ``Executable`` of a course build; ``built`` is the project's build (so
    ``%mlc_time ex`` and ``%mlc_build`` know it)."""

    def __init__(self, built: Built) -> None:
        executable = built.executable
        super().__init__(getattr(executable, "mod", executable))
        self.built = built

    def __repr__(self) -> str:
        return f"<relax executable: {', '.join(self.built.functions)} built for " + (
            f"{self.built.target.kind.name}>"
        )


def relax_build(
    mod: Any, target: Any = None, params: dict[str, Any] | None = None, **ignored: Any
) -> CourseExecutable:
    """Build a Relax module like the book's ``relax.build`` (``params`` are bound into
    ``main``); the pipelines and other stock keywords are accepted and ignored."""
    if params:
        mod = tvm_compat.tvm().relax.transform.BindParams("main", params)(mod)
    return CourseExecutable(build_module(mod, target))
