"""``%%mlc_passes MOD``: apply passes step by step; ``%mlc_passes MOD --pipeline NAME``: watch a
pipeline pass by pass; ``%mlc_graph OBJ``: a Relax function's dataflow graph."""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display

from ..display.graph import GraphView
from ..display.passes import passes_bundle
from ..passes import run_pass_cell, run_pipeline
from ..tvm_compat import ir_module_type, script_namespaces
from ..widgets.pass_stepper import PassStepper
from .course_state import course_spelling_options
from .lookup import lookup


def _check_module(mod: Any, expr: str) -> None:
    if not isinstance(mod, ir_module_type()):
        raise UsageError(
            f"%mlc_passes: {expr} is a {type(mod).__name__}, not an IRModule "
            "(passes run on modules: write an @I.ir_module or use a BlockBuilder)"
        )


@magics_class
class PassMagics(Magics):
    """Graph passes step by step, and dataflow graphs of Relax functions."""

    @magic_arguments()
    @argument("mod", help="the IRModule to transform (never modified)")
    @argument("--as", dest="name", default=None, help="bind the final module here (MOD_passes)")
    @argument("--pipeline", default=None, help="watch a named pipeline: default, zero, target...")
    @argument("--target", default=None, help="target for --pipeline target and timing")
    @argument("--static", action="store_true", help="show the static HTML view, no widget")
    @line_cell_magic
    def mlc_passes(self, line: str, cell: str | None = None) -> Any:
        """Apply passes to MOD one statement at a time and show every step.

        As a cell magic each statement is one pass or rewrite: ``relax.transform.FuseTIR()``, an
        instance of a ``@relax.expr_functor.mutator`` class (rewrites every Relax function),
        ``FuseDenseAddPass()(MLPModel)`` assigned to a name, or anything using ``mod`` (the
        module so far). Classes and functions may be defined in the cell. On success the final
        module is bound to ``--as NAME`` (default ``MOD_passes``) with the cell's names; a failing
        statement is reported at its line with TVM's reason and nothing is bound. As a line magic
        ``--pipeline NAME`` runs a Relax pipeline and shows each of its passes.
        """
        args = parse_argstring(self.mlc_passes, line)
        mod = lookup(self.shell, args.mod, "mlc_passes", "the module")
        _check_module(mod, args.mod)

        if cell is None and args.pipeline is None:
            raise UsageError("%mlc_passes MOD needs --pipeline NAME (or use %%mlc_passes MOD)")
        if cell is not None and args.pipeline is not None:
            raise UsageError("%%mlc_passes: give either a cell of passes or --pipeline, not both")
        if cell is None:
            try:
                run = run_pipeline(mod, args.pipeline, args.target)
            except ValueError as err:
                raise UsageError(f"%mlc_passes: {err}") from None
            title = f"pipeline {args.pipeline!r} on {args.mod}"
        else:
            run = run_pass_cell(cell, mod, namespace=self.shell.user_ns, first_line=2)
            title = f"passes on {args.mod}"
        base = args.mod.split(".")[0].split("[")[0]
        if args.static:
            display(passes_bundle(run), raw=True)
        else:
            display(PassStepper(run, title=title, target=args.target,
                                namespace=self.shell.user_ns, base=base,
                                **course_spelling_options(self.shell)))  # fmt: skip
        if run.error is not None:
            raise run.error
        self._bind(run, args.name or f"{base}_passes")
        return None

    def _bind(self, run: Any, name: str) -> None:
        user_ns = self.shell.user_ns
        skip = set(script_namespaces()) | {"mod", "__builtins__", "__name__"}
        for key, value in run.namespace.items():
            if key not in skip and not key.startswith("_") and user_ns.get(key, None) is not value:
                user_ns[key] = value
        user_ns[name] = run.mod

    @magic_arguments()
    @argument("obj", help="an IRModule or a Relax function")
    @argument("--func", default=None, help="which Relax function of the module (default: main)")
    @argument("--fused", default="auto", choices=("auto", "group", "collapse"),
              help="fused functions as boxes (group), as one node (collapse), or auto by size")  # fmt: skip
    @line_magic
    def mlc_graph(self, line: str) -> Any:
        """Draw a Relax function as a dataflow graph (operators as nodes, tensors as edges).

        SVG through Graphviz's ``dot`` when installed, else a text listing; a saved notebook
        keeps both. Fused sub-functions are drawn as boxes, or as one node for large graphs.
        """
        args = parse_argstring(self.mlc_graph, line)
        obj = lookup(self.shell, args.obj, "mlc_graph")

        try:
            return GraphView(obj, args.func, args.fused)
        except (ValueError, AttributeError, TypeError) as err:
            raise UsageError(f"%mlc_graph: {err}") from None


def register(ipython: Any) -> None:
    ipython.register_magics(PassMagics)
