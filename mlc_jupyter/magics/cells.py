"""``%%tir`` and ``%%relax``: a cell of TVMScript becomes TVM objects in the notebook's namespace."""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display

from ..cells import parse_script
from ..cells.parse import ParsedCell
from ..display.graph import GraphView
from ..display.ir import ir_bundle
from ..graph import relax_function_names
from ..tvm_compat import ir_module_type, relax_function_type


def _bind(shell: Any, parsed: ParsedCell, rename: str | None) -> tuple[str, Any]:
    """Bind the cell's definitions (all or nothing) and return the name and value of the last."""
    objects = dict(parsed.objects)
    if rename:
        if len(objects) != 1:
            raise UsageError(
                f"NAME renames a single definition, but this cell defines {len(objects)}: "
                f"{', '.join(objects) or 'nothing'}"
            )
        objects = {rename: next(iter(objects.values()))}
    if not objects:
        raise UsageError("the cell defines nothing: write an @I.ir_module class or a function")
    shell.user_ns.update(objects)
    name = list(objects)[-1]
    return name, objects[name]


@magics_class
class CellMagics(Magics):
    """TVMScript cells in the MLC course's spelling or TVM 0.27's."""

    def _run(self, kind: str, line: str, cell: str) -> Any:
        args = parse_argstring(getattr(self, kind), line)
        # IPython counts the running cell before it runs it: its prompt is the count minus one
        number = (getattr(self.shell, "execution_count", 0) or 0) - 1
        parsed = parse_script(
            cell, self.shell.user_ns, kind=kind, first_line=2,
            cell_name=f"In [{number}]" if number > 0 else f"the %%{kind} cell",
        )  # fmt: skip
        _name, value = _bind(self.shell, parsed, args.name)
        for message in parsed.warnings:
            print(f"warning: {message}")
        if getattr(args, "graph", False):
            self._graphs(parsed.objects)
        if args.quiet:
            self.shell.user_ns["_"] = value
            return None
        # the echo in the learner's own spelling: a cell written as the book spells TensorIR
        # (T.block, "tir.noalias") is shown so, not as TVM 0.27 prints it (T.sblock, tirx)
        spelling = "course" if parsed.translations else "tvm"
        for other, obj in list(parsed.objects.items())[:-1] if not args.name else []:
            display(ir_bundle(obj, other, spelling), raw=True)
        if spelling == "course":
            display(ir_bundle(value, spelling=spelling), raw=True)
            self.shell.user_ns["_"] = value
            return None
        return value

    @staticmethod
    def _graphs(objects: dict[str, Any]) -> None:
        """Show the dataflow graph of every Relax function the cell defined (fused sub-functions
        marked ``Primitive`` are drawn inside their callers)."""
        for obj in objects.values():
            if isinstance(obj, relax_function_type()):
                display(GraphView(obj))
            elif isinstance(obj, ir_module_type()):
                for name in relax_function_names(obj):
                    if "Primitive" not in (obj[name].attrs or {}):
                        display(GraphView(obj, name))

    @magic_arguments()
    @argument("name", nargs="?", default=None, help="bind the (single) definition under this name")
    @argument("-q", "--quiet", action="store_true", help="bind without showing the module")
    @cell_magic
    def tir(self, line: str, cell: str) -> Any:
        """Parse a cell of TensorIR (TVMScript) and bind each top-level definition.

        The course's spelling (``from tvm.script import tir as T``, ``T.block``, ``@T.prim_func``,
        ``"tir.noalias"``) and TVM 0.27's both work; ``T``, ``I``, ``R`` and ``tvm`` need no import.
        """
        return self._run("tir", line, cell)

    @magic_arguments()
    @argument("name", nargs="?", default=None, help="bind the (single) definition under this name")
    @argument("-q", "--quiet", action="store_true", help="bind without showing the module")
    @argument("--graph", action="store_true", help="also draw each Relax function's dataflow graph")
    @cell_magic
    def relax(self, line: str, cell: str) -> Any:
        """Parse a cell of Relax (TVMScript, may mix ``@T.prim_func`` and ``@R.function``)."""
        return self._run("relax", line, cell)


def register(ipython: Any) -> None:
    ipython.register_magics(CellMagics)
