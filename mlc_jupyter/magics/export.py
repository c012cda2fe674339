"""``%mlc_export``: a model build written out with a loader, for programs outside Jupyter."""

from __future__ import annotations

from typing import Any

from IPython.core.magic import Magics, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from ..deploy import export_build
from .lookup import lookup, unquote


@magics_class
class ExportMagics(Magics):
    """Builds out of the notebook."""

    @magic_arguments()
    @argument("model", help="what %%mlc_build or %%mlc_tune bound for an imported model")
    @argument("path", help="the folder to write (created; files of an earlier export replaced)")
    @line_magic
    def mlc_export(self, line: str) -> None:
        """Write MODEL's library and a loader to PATH, so a plain Python program runs it.

        PATH/NAME_lib.so is the library, PATH/NAME.py the loader (NAME from the folder's name): it
        needs TVM and NumPy, not mlc_jupyter or Jupyter; ``NAME.load()(x)`` runs the model on
        NumPy arrays or PyTorch tensors, and ``python PATH/NAME.py`` checks the library against
        the outputs this build gave for the model's example inputs (saved beside it, with the
        weights of a model imported with ``--params inputs``).
        """
        args = parse_argstring(self.mlc_export, line)
        model = lookup(self.shell, args.model, "mlc_export", "the model")
        exported = export_build(model, unquote(args.path), args.model)
        print(exported.describe())


def register(ipython: Any) -> None:
    """Register ``%mlc_export``."""
    ipython.register_magics(ExportMagics)
