"""``%mlc_build`` and ``%mlc_time``: cached builds and honest timings, side by side."""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display

from ..display.timing import built_text, register_formatters, report_bundle


def _lookup(shell: Any, name: str) -> Any:
    try:
        return eval(name, shell.user_ns)  # noqa: S307 - a name or attribute in the user's namespace
    except Exception:  # noqa: BLE001
        raise UsageError(f"{name!r} is not defined in this notebook") from None


@magics_class
class BuildMagics(Magics):
    """Build modules for a target and time their functions."""

    @magic_arguments()
    @argument("mod", help="a PrimFunc, TensorIR IRModule or Relax module in the namespace")
    @argument("--target", "-t", default=None, help="llvm, cpu, cuda, 'llvm -num-cores=2', a tag")
    @argument("--as", dest="name", default=None, help="bind the build under NAME (<MOD>_lib)")
    @argument("--force", action="store_true", help="rebuild even when a cached build exists")
    @argument(
        "--show",
        choices=["tir", "llvm", "asm", "cuda"],
        default=None,
        help="show the generated code",
    )
    @line_magic
    def mlc_build(self, line: str) -> None:
        """Build MOD (cached by structure, target and TVM version) and bind the result.

        The bound object's functions take NumPy arrays, PyTorch tensors or TVM tensors;
        passing only the inputs of a destination-passing function returns its outputs.
        """
        from ..compilation import build_module, generated_source

        args = parse_argstring(self.mlc_build, line)
        mod = _lookup(self.shell, args.mod)
        built = build_module(mod, args.target, force=args.force)
        name = args.name or f"{args.mod.split('.')[-1]}_lib"
        self.shell.user_ns[name] = built
        print(built_text(built, name))
        if args.show:
            from ..display.highlight import code_bundle

            display(
                code_bundle(generated_source(built, args.show), f"{args.show} of {name}"), raw=True
            )

    @magic_arguments()
    @argument("funcs", nargs="+", help="built functions or modules (variants) to time")
    @argument("--args", default=None, help="Python expression giving the inputs (a tuple)")
    @argument(
        "--ref",
        default=None,
        help="NumPy expression over the parameter names (np.maximum(A @ B, 0)) or a callable",
    )
    @argument("--target", "-t", default=None, help="target for variants that are not built yet")
    @argument("--func", default=None, help="the function to time in each module")
    @argument("--number", type=int, default=None, help="calls per run (default: calibrated)")
    @argument("--repeat", type=int, default=5, help="runs (default 5)")
    @argument("--min-repeat-ms", type=float, default=50.0, help="least time per run")
    @argument("-o", dest="output", action="store_true", help="return the TimingReport")
    @line_magic
    def mlc_time(self, line: str) -> Any:
        """Check each variant against --ref (or the first variant), then time it.

        Reports median, mean, std, min, runs, GFLOP/s and speed-up; with several variants a
        table and a bar chart, plus NumPy and PyTorch rows when --ref is an array expression.
        """
        from ..measure import time_functions

        args = parse_argstring(self.mlc_time, line)
        ns = self.shell.user_ns
        variants = {name: _lookup(self.shell, name) for name in args.funcs}
        inputs = _lookup(self.shell, _unquote(args.args)) if args.args else None
        ref = _unquote(args.ref)
        if ref is not None and ref.isidentifier() and callable(ns.get(ref)):
            ref = ns[ref]
        report = time_functions(
            variants,
            args.target,
            func_name=args.func,
            args=inputs,
            ref=ref,
            number=args.number,
            repeat=args.repeat,
            min_repeat_ms=args.min_repeat_ms,
            namespace=ns,
        )
        if args.output:
            return report
        display(report_bundle(report), raw=True)
        return None


def _unquote(ref: Any) -> Any:
    if isinstance(ref, str) and len(ref) > 1 and ref[0] == ref[-1] and ref[0] in "'\"":
        return ref[1:-1]
    return ref


def register(ipython: Any) -> None:
    """Register ``%mlc_build`` / ``%mlc_time`` and the timing renderers."""
    ipython.register_magics(BuildMagics)
    register_formatters(ipython)
