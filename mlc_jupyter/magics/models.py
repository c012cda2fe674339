"""``%mlc_import``: a PyTorch model into a Relax module, summarised, shown and bound."""

from __future__ import annotations

from typing import Any

from IPython.core.magic import Magics, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display

from ..display.models import import_bundle
from ..models import import_model
from .lookup import lookup, unquote
from .progress import StageProgress


@magics_class
class ModelMagics(Magics):
    """Whole models from PyTorch."""

    @magic_arguments()
    @argument("model", help="a torch.nn.Module in the namespace")
    @argument(
        "--inputs",
        required=True,
        help="Python expression for example inputs: a tensor or a tuple (torch.randn(1, 784))",
    )
    @argument("--as", dest="name", default=None, help="bind the result here (default MODEL_relax)")
    @argument(
        "--params",
        choices=["bound", "inputs"],
        default="bound",
        help="weights as constants of the module (bound) or as parameters of main (inputs)",
    )
    @argument(
        "--via",
        choices=["export", "fx"],
        default="export",
        help="torch.export + from_exported_program, or the book's fx.symbolic_trace + from_fx",
    )
    @argument("--quiet", action="store_true", help="bind without showing the summary")
    @line_magic
    def mlc_import(self, line: str) -> None:
        """Import a PyTorch model into Relax; show its operators, weights and kernels; bind it.

        The result (an ``ImportedModel``) builds with ``%mlc_build``, tunes with ``%mlc_tune``
        and races its PyTorch original in ``%mlc_time``; ``NAME.mod`` is the IRModule.
        """
        args = parse_argstring(self.mlc_import, line)
        model = lookup(self.shell, args.model, "mlc_import", "the model")
        inputs = lookup(self.shell, unquote(args.inputs), "mlc_import", "--inputs")
        name = args.name or f"{args.model.split('.')[-1]}_relax"
        with StageProgress(self.shell, f"importing {args.model}", args.quiet) as progress:
            imported = import_model(
                model, inputs, via=args.via, params=args.params, on_progress=progress
            )
        self.shell.user_ns[name] = imported
        if not args.quiet:
            display(import_bundle(imported, name), raw=True)


def register(ipython: Any) -> None:
    ipython.register_magics(ModelMagics)
