"""``%mlc_tune``: MetaSchedule tuning with live progress (RPC devices: :mod:`.devices`)."""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display

from .. import tune as tuning  # tuning.tune loads TVM on first use
from ..display.tune import result_bundle
from ..tvm_compat import is_tvm_object
from .lookup import lookup
from .progress import LiveTuneProgress


def _workload(shell: Any, name: str) -> Any:
    """The module ``name`` holds, or the one it returns when it is a plain Python function."""
    value = lookup(shell, name, "mlc_tune")
    if callable(value) and not is_tvm_object(value):
        value = value()
    return value


def _bindings(shell: Any, items: list[str]) -> dict[str, Any]:
    """``--bind alpha=2.0 --bind n=N`` as ``{"alpha": 2.0, "n": <N's value>}``."""
    bind: dict[str, Any] = {}
    for item in items:
        name, sep, expr = item.partition("=")
        name, expr = name.strip(), expr.strip()
        if not sep or not name.isidentifier() or not expr:
            raise UsageError(
                f"%mlc_tune: --bind takes NAME=VALUE (a scalar parameter and its value, e.g. "
                f"--bind alpha=2.0), not {item!r}"
            )
        bind[name] = lookup(shell, expr, "mlc_tune", f"the value of {name}")
    return bind


@magics_class
class TuneMagics(Magics):
    """Tuning with MetaSchedule from a notebook."""

    @magic_arguments()
    @argument(
        "mod", help="PrimFunc, TensorIR IRModule, Relax IRModule, or a function returning one"
    )
    @argument("--target", default=None, help="target (default: this CPU with all its cores)")
    @argument(
        "--time",
        default=None,
        help="tune this long (10m, 90s, 1h30m) or until the search has converged; "
        "the default with neither --time nor --trials is 10m",
    )
    @argument("--trials", type=int, default=None, help="measured candidates in all (runs them all)")
    @argument(
        "--per-iter",
        type=int,
        default=None,
        help="candidates per search round (default: 64, or a quarter of the trials when fewer)",
    )
    @argument("--work-dir", default=None, help="database folder (default: per-workload cache)")
    @argument(
        "--fresh",
        action="store_true",
        help="start over: the work dir's database is moved into previous-<time>/",
    )
    @argument(
        "--no-wait",
        action="store_true",
        help="fail at once when another run tunes into the work dir (default: wait for it)",
    )
    @argument("--seed", type=int, default=None, help="random seed of the search")
    @argument(
        "--space",
        default="default",
        help="default (the matmul space for matmul-like kernels, the direct-convolution space "
        "for NHWC convolutions and pooling, else MetaSchedule's), metaschedule, matmul, conv, "
        "or the name of a schedule function",
    )
    @argument("--rpc", default=None, help="HOST:PORT:KEY of a TVM RPC tracker, or 'env'")
    @argument(
        "--func",
        default=None,
        help="of a Relax model, tune only this kernel and put it back (the book's section 4.6)",
    )
    @argument(
        "--bind",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="tune a kernel for this value of its scalar parameter NAME (VALUE: a number or a "
        "notebook expression); the tuned kernel has it written in. Repeat for several",
    )
    @argument("--as", dest="name", default=None, help="bind the result here (default MOD_tuned)")
    @argument("--quiet", action="store_true", help="no progress output")
    @line_magic
    def mlc_tune(self, line: str) -> Any:
        """Tune MOD with MetaSchedule; bind a TuneResult (tuned module, trace, speed-up).

        Without ``--trials`` it tunes until ``--time`` (default 10 minutes) is up or the search
        has converged. A Relax model (or an imported one) is tuned kernel by kernel, the budget
        split by each kernel's share of the model's latency; the result's table shows each
        kernel before and after. Records live in a JSON database in the work dir: running the same tune
        again resumes (measured trials are not measured again), ``--fresh`` starts over, Ctrl-C
        stops after the batch in flight and keeps the best so far.
        """
        args = parse_argstring(self.mlc_tune, line)
        mod = _workload(self.shell, args.mod)
        space = args.space
        if space not in tuning.SPACE_NAMES:
            space = self.shell.user_ns.get(space, space)
            if not callable(space):
                raise UsageError(
                    "--space takes default, metaschedule, matmul, conv or the name of a schedule "
                    "function"
                )
        bind = _bindings(self.shell, args.bind)
        progress = LiveTuneProgress(self.shell, args.quiet, args.mod)
        result = tuning.tune(
            mod,
            args.target,
            trials=args.trials,
            time=args.time,
            per_iter=args.per_iter,
            work_dir=args.work_dir,
            fresh=args.fresh,
            wait=not args.no_wait,
            seed=args.seed,
            space=space,
            rpc=args.rpc,
            on_progress=progress,
            func=args.func,
            on_task=progress.task_started,
            bind=bind or None,
        )
        name = args.name or f"{args.mod.split('.')[-1]}_tuned"
        self.shell.user_ns[name] = result
        if not args.quiet:
            print(f"bound {name}")
            display(result_bundle(result), raw=True)
        return None


def register(ipython: Any) -> None:
    ipython.register_magics(TuneMagics)
