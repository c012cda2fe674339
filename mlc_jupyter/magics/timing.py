"""``%mlc_time``: check variants against a reference, then time them side by side."""

from __future__ import annotations

from typing import Any

from IPython.core.magic import Magics, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display

from ..display.profile import profile_bundle
from ..display.timing import mark_shown, report_bundle
from ..measure import Sampling, builds_relax_module, profile_kernels, time_functions
from .lookup import lookup, unquote


@magics_class
class TimingMagics(Magics):
    """Honest timings of built functions, with NumPy and PyTorch rows."""

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
    @argument(
        "--rpc",
        default=None,
        help="HOST:PORT:KEY of a TVM RPC tracker (or 'env'): run and time on that device",
    )
    @argument("--no-compile", action="store_true", help="no torch.compile row for PyTorch models")
    @argument(
        "--runtimes",
        action="store_true",
        help="also race the PyTorch model under ONNX Runtime, OpenVINO and torch.compile with "
        "inductor freezing (pip install onnxruntime onnx onnxscript openvino)",
    )
    @argument(
        "--breakdown",
        action="store_true",
        help="also show where the time of each Relax model goes, kernel by kernel",
    )
    @argument(
        "-o",
        dest="output",
        action="store_true",
        help="also return the TimingReport (as %%timeit -o)",
    )
    @line_magic
    def mlc_time(self, line: str) -> Any:
        """Check each variant against --ref (or the first variant), then time them in turns.

        Variants are built functions and modules, tuning results, imported models and PyTorch
        models (a row for the model eager and one under torch.compile). Reports median, mean,
        std, min, runs, GFLOP/s and speed-up over the first row; with several rows a table and a
        bar chart, plus NumPy and PyTorch rows when --ref is an array expression, and PyTorch
        rows when the reference is a PyTorch model (an imported model's own by default).
        --runtimes adds that model under ONNX Runtime, OpenVINO and torch.compile with inductor
        freezing, on the TVM build's threads (a runtime not installed is a row saying so).
        With --rpc the variants run on an RPC server's device (a GPU this machine lacks, say).
        """
        args = parse_argstring(self.mlc_time, line)
        ns = self.shell.user_ns
        variants = {name: lookup(self.shell, name, "mlc_time") for name in args.funcs}
        inputs = lookup(self.shell, unquote(args.args), "mlc_time", "--args") if args.args else None
        ref = unquote(args.ref)
        if ref is not None and ref.isidentifier() and callable(ns.get(ref)):
            ref = ns[ref]
        report = time_functions(
            variants,
            args.target,
            func_name=args.func,
            args=inputs,
            ref=ref,
            sampling=Sampling(args.repeat, args.min_repeat_ms, args.number),
            namespace=ns,
            rpc=args.rpc,
            torch_compile=not args.no_compile,
            runtimes=args.runtimes,
        )
        display(report_bundle(report), raw=True)
        if args.output:
            mark_shown(report, self.shell.execution_count)
        if args.breakdown:
            for name, variant in variants.items():
                if builds_relax_module(variant, args.target):
                    profile = profile_kernels(variant, args.target, args=inputs, name=name)
                    display(profile_bundle(profile), raw=True)
        return report if args.output else None


def register(ipython: Any) -> None:
    """Register ``%mlc_time``."""
    ipython.register_magics(TimingMagics)
