"""``%mlc_build``: a cached build of a module for a target, bound in the notebook."""

from __future__ import annotations

import re
from typing import Any

from IPython.core.magic import Magics, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display

from ..compilation import SCHEDULES, SOURCE_KINDS, build_module, generated_source
from ..compilation.remote import parse_rpc, remote_target
from ..config import checked_builds, isolated_builds, set_checked_builds, set_isolated_builds
from ..display.build import built_text
from ..display.highlight import code_bundle
from ..errors import KernelCompileError
from .lookup import lookup
from .progress import StageProgress


@magics_class
class BuildMagics(Magics):
    """Build modules for a target."""

    @magic_arguments()
    @argument("mod", help="a PrimFunc, TensorIR IRModule or Relax module in the namespace")
    @argument("--target", "-t", default=None, help="llvm, cpu, cuda, 'llvm -num-cores=2', a tag")
    @argument("--as", dest="name", default=None, help="bind the build under NAME (<MOD>_lib)")
    @argument("--force", action="store_true", help="rebuild even when a cached build exists")
    @argument("--show", choices=list(SOURCE_KINDS), default=None, help="show the generated code")
    @argument(
        "--checked",
        action="store_true",
        default=None,
        help="test every buffer index at run time: a bad index raises instead of corrupting memory",
    )
    @argument(
        "--isolate",
        action="store_true",
        default=None,
        help="run the functions in a worker process: a kernel that crashes fails its call, "
        "not the notebook (TIR modules on the CPU)",
    )
    @argument(
        "--rpc",
        default=None,
        help="HOST:PORT:KEY (or 'env'): build for that RPC server's GPU (its arch and limits)",
    )
    @argument(
        "--schedule",
        choices=list(SCHEDULES),
        default="default",
        help="kernels of a Relax model's operators: default schedules, or none (TVM's loops)",
    )
    @line_magic
    def mlc_build(self, line: str) -> None:
        """Build MOD (cached by structure, target and TVM version) and bind the result.

        The bound object's functions take NumPy arrays, PyTorch tensors or TVM tensors;
        passing only the inputs of a destination-passing function returns its outputs.
        A CUDA build is compiled to GPU code when nvcc is installed (``--show ptx``).
        A kernel that TVM proves to index outside a buffer is refused before it is built, at
        the cell line of the access; --checked (or %mlc_checked on) also catches the indices
        only known at run time. --isolate (or %mlc_isolate on) runs the functions in a worker
        process, so a kernel that crashes (SIGSEGV) fails its call and the notebook lives on.
        The kernels a Relax model's operators become get default schedules (``--schedule
        none``: as ``tvm.compile`` builds them); kernels written by hand keep their loops.
        """
        args = parse_argstring(self.mlc_build, line)
        mod = lookup(self.shell, args.mod, "mlc_build", "the module")
        target = args.target
        if args.rpc:  # a build needs no device: only an explicit --rpc asks a server
            target = remote_target(parse_rpc(args.rpc), target)
        try:
            with StageProgress(self.shell, f"building {args.mod}") as progress:
                built = build_module(
                    mod,
                    target,
                    force=args.force,
                    checked=args.checked,
                    isolate=args.isolate,
                    schedule=args.schedule,
                    on_progress=progress,
                )
        except KernelCompileError as err:
            err.cell = err.cell or _cell_with(self.shell, err.words)
            raise
        name = args.name or f"{args.mod.split('.')[-1]}_lib"
        self.shell.user_ns[name] = built
        print(built_text(built, name))
        if args.show:
            source = generated_source(built, args.show)
            display(code_bundle(source, f"{args.show} of {name}"), raw=True)

    @magic_arguments()
    @argument("state", nargs="?", choices=["on", "off"], default=None, help="on or off")
    @line_magic
    def mlc_checked(self, line: str) -> None:
        """Switch checked builds on or off for the session (every build path: %mlc_build,
        %mlc_time, the schedule stepper, %mlc_tune's baseline); without an argument, say which.

        A checked kernel tests each buffer index before it uses it, so an index that only run
        time can know (A[idx[i]]) raises OutOfBoundsError instead of corrupting memory.
        """
        args = parse_argstring(self.mlc_checked, line)
        if args.state is not None:
            set_checked_builds(args.state == "on")
        print(f"checked builds: {'on' if checked_builds() else 'off'}")

    @magic_arguments()
    @argument("state", nargs="?", choices=["on", "off"], default=None, help="on or off")
    @line_magic
    def mlc_isolate(self, line: str) -> None:
        """Switch isolated builds on or off for the session (TIR modules built for the CPU by
        %mlc_build, the course's tvm.build); without an argument, say which.

        An isolated build's functions run in a worker process with the caller's arrays copied
        through shared memory, so a kernel that crashes (SIGSEGV, SIGBUS, an abort) raises
        KernelCrashError in its cell and the notebook's variables survive.
        """
        args = parse_argstring(self.mlc_isolate, line)
        if args.state is not None:
            set_isolated_builds(args.state == "on")
        print(
            f"isolated builds: {'on' if isolated_builds() else 'off'}"
            + (" (builds made from now on run their functions in a worker process)"
               if isolated_builds() else "")
        )  # fmt: skip


def _cell_with(shell: Any, words: tuple[str, ...]) -> tuple[str, int, str] | None:
    """The newest earlier cell line that names one of ``words``: ``("cell In[5]", line, text)``.

    A kernel the GPU compiler rejects is reported in terms of the generated CUDA; a name it
    quotes (a ``T.call_extern`` function, say) usually comes from a ``%%tir`` cell.
    """
    history = shell.history_manager.input_hist_raw
    patterns = [re.compile(rf"\b{re.escape(word)}\b") for word in words]
    for number in range(len(history) - 2, 0, -1):  # the last entry is the running cell
        for index, text in enumerate(history[number].splitlines(), 1):
            if any(p.search(text) for p in patterns):
                return f"cell In[{number}]", index, text
    return None


def register(ipython: Any) -> None:
    """Register ``%mlc_build``."""
    ipython.register_magics(BuildMagics)
