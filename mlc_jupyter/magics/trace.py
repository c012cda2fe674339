"""``%mlc_trace OBJ [--mod MOD] [--as NAME]``: the trace replay widget for a schedule or tune result."""

from __future__ import annotations

from typing import Any

from IPython.core.magic import Magics, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display

from ..display.trace import trace_bundle
from ..trace import load_trace
from ..tvm_compat import ir_module_type, is_tvm_object, prim_func_type
from ..widgets.trace_replay import TraceReplay
from .course_state import course_spelling_options
from .lookup import lookup


def _module_candidates(shell: Any) -> list[Any]:
    """The notebook's IRModules and PrimFuncs, newest first (to find a Schedule's module)."""
    kinds = (ir_module_type(), prim_func_type())
    values = [v for k, v in shell.user_ns.items() if not k.startswith("_") and is_tvm_object(v)]
    return [v for v in reversed(values) if isinstance(v, kinds)]


@magics_class
class TraceMagics(Magics):
    """Schedule traces: step through them, edit their decisions, re-time."""

    @magic_arguments()
    @argument("obj", help="Schedule, Trace, trace JSON, %%mlc_tune result or tuning record")
    @argument("--mod", default=None, help="the module the trace was recorded on")
    @argument("--as", dest="name", default=None, help="bind the picked result here")
    @argument("--target", default=None, help="target for Re-time (default: as %%mlc_time)")
    @argument("--static", action="store_true", help="show the static HTML view, no widget")
    @line_magic
    def mlc_trace(self, line: str) -> Any:
        """Replay a schedule trace step by step, edit its sampling decisions, re-time, export.

        A Schedule forgets the module it started from: give it with ``--mod`` (otherwise the
        notebook's modules are tried). The row picked in the history table is bound to
        ``--as NAME`` (default ``OBJ_replayed``). Returns the widget (``w = %mlc_trace sch``).
        """
        args = parse_argstring(self.mlc_trace, line)
        obj = lookup(self.shell, args.obj, "mlc_trace", "the trace")
        mod = lookup(self.shell, args.mod, "mlc_trace", "the module") if args.mod else None
        base = args.obj.split(".")[0].split("[")[0]
        name = args.name or f"{base}_replayed"
        candidates = [] if mod is not None else _module_candidates(self.shell)
        session = load_trace(obj, mod, candidates)
        mod_name = args.mod or (
            f"{args.obj}.workload" if hasattr(obj, "workload") else self._name_of(session.mod)
        )
        if args.static:
            display(trace_bundle(session), raw=True)
            return None

        def bind(result: Any) -> None:
            self.shell.user_ns[name] = result

        return TraceReplay(
            session=session, mod_name=mod_name, bind=bind, bind_name=name, target=args.target,
            **course_spelling_options(self.shell),
        )  # fmt: skip

    def _name_of(self, mod: Any) -> str:
        """The notebook's name for the module a trace was matched to (the exported cell's MOD)."""
        for key, value in reversed(list(self.shell.user_ns.items())):
            if not key.startswith("_") and is_tvm_object(value) and value.same_as(mod):
                return key
        return "mod"


def register(ipython: Any) -> None:
    ipython.register_magics(TraceMagics)
