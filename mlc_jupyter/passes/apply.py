"""What a statement of a pass cell does to the module: a value becomes zero, one or more passes.

A ``tvm.transform.Pass`` runs on the module (a ``Sequential`` built in the cell shows each of its
passes); a ``@relax.expr_functor.mutator`` instance (or class) rewrites every Relax function; an
``IRModule`` replaces the module; a Relax function or a schedule puts functions back into it.
"""

from __future__ import annotations

from typing import Any

from .. import tvm_compat

__all__ = ["Applied", "apply_value", "observe_pass", "replace_function", "rewrite_functions"]

#: (pass name, module after it), in the order they ran.
Applied = list[tuple[str, Any]]


def observe_pass(pass_: Any, mod: Any) -> Applied:
    """Run ``pass_`` on ``mod``; a ``Sequential`` (or a pipeline) gives each pass it ran.

    Watched with a PassInstrument: the passes recorded are the children of the outermost
    ``sequential``, so TVM's internal sub-passes (FuseTIR's own DeadCodeElimination...) stay
    inside the pass that ran them.
    """
    stack: list[str] = []
    recorded: Applied = []

    def before(name: str) -> None:
        stack.append(name)

    def after(name: str, out: Any) -> None:
        stack.pop()
        if "sequential" in stack and stack.index("sequential") == len(stack) - 1:
            recorded.append((name, out))

    result = _observe_passes(lambda: pass_(mod), before, after)
    if not recorded:
        return [(str(pass_.info.name), result)]
    if not recorded[-1][1].same_as(result):  # a pipeline that changed the module after its passes
        recorded.append((str(pass_.info.name), result))
    return recorded


def _observe_passes(run: Any, on_before: Any, on_after: Any) -> Any:
    """Call ``run()`` in a PassContext whose instrument reports every pass (nested ones too).

    ``on_before(name)`` and ``on_after(name, mod)`` are called around each pass; returns what
    ``run`` returned. The context keeps the current opt level and config.
    """
    _tvm = tvm_compat.tvm()

    @_tvm.instrument.pass_instrument
    class _Observer:
        def run_before_pass(self, _mod: Any, info: Any) -> None:
            on_before(str(info.name))

        def run_after_pass(self, mod: Any, info: Any) -> None:
            on_after(str(info.name), mod)

    current = _tvm.transform.PassContext.current()
    with _tvm.transform.PassContext(
        opt_level=current.opt_level, config=dict(current.config), instruments=[_Observer()]
    ):
        return run()


def rewrite_functions(mutator: Any, mod: Any) -> Any:
    """A copy of ``mod`` with every Relax function rewritten by ``mutator.visit_expr``."""
    out = mod.clone()
    relax_function = tvm_compat.relax_function_type()
    for gv, func in list(mod.functions_items()):
        if isinstance(func, relax_function):
            out.update_func(gv, mutator.visit_expr(func))
    return out


def _function_name(func: Any) -> str | None:
    attrs = getattr(func, "attrs", None)
    return str(attrs["global_symbol"]) if attrs is not None and "global_symbol" in attrs else None


def replace_function(mod: Any, name: str, source: Any) -> Any:
    """A copy of ``mod`` whose function ``name`` is taken from ``source`` (the book's last step).

    ``source`` is a function, an IRModule or a schedule (``sch``): from a module the function of
    the same name, else its only function (a schedule of one PrimFunc calls it ``main``).
    """
    func = _pick_function(getattr(source, "mod", source), name)
    if func is None:
        raise ValueError(f"{type(source).__name__} has no function {name!r} to put back")
    names = [gv.name_hint for gv in mod.get_global_vars()]
    if name not in names:
        raise ValueError(f"the module has no function {name!r}; it has: {', '.join(names)}")
    out = mod.clone()
    gv = out.get_global_var(name)
    if _function_name(func) not in (None, name):
        func = func.with_attr("global_symbol", name)
    out.update_func(gv, func)
    return out


def _pick_function(source: Any, name: str) -> Any:
    if not hasattr(source, "functions_items"):
        return source
    items = {gv.name_hint: f for gv, f in source.functions_items()}
    if name in items:
        return items[name]
    return next(iter(items.values())) if len(items) == 1 else None


def _put_back_schedule(sch: Any, mod: Any) -> Any:
    """Every TensorIR function of the schedule's module that ``mod`` also has, put back."""
    out = mod.clone()
    names = {gv.name_hint for gv in mod.get_global_vars()}
    prim_func = tvm_compat.prim_func_type()
    for gv, func in sch.mod.functions_items():
        if isinstance(func, prim_func) and gv.name_hint in names:
            out.update_func(out.get_global_var(gv.name_hint), func)
    return out


def apply_value(value: Any, mod: Any, label: str) -> Applied | None:
    """What ``value`` (a statement's result) does to ``mod``; ``None``: it is not a transform.

    ``label`` names the step when the value has no name of its own (the statement's text).
    """
    if isinstance(value, tvm_compat.ir_module_type()):
        return [(label, value)]
    if isinstance(value, tvm_compat.pass_type()):
        return observe_pass(value, mod)
    if tvm_compat.is_expr_mutator_class(value):
        try:
            value = value()
        except TypeError as err:
            raise TypeError(
                f"{value.__name__}() needs arguments ({err}); write the call in the cell, "
                f"e.g. {value.__name__}(mod).transform()"
            ) from None
    if tvm_compat.is_expr_mutator(value):
        return [(type(value).__name__, rewrite_functions(value, mod))]
    if isinstance(value, tvm_compat.relax_function_type() | tvm_compat.prim_func_type()):
        name = _function_name(value) or _only_relax_function(mod)
        return [(label, replace_function(mod, name, value))]
    if tvm_compat.is_schedule(value):
        return [(label, _put_back_schedule(value, mod))]
    return None


def _only_relax_function(mod: Any) -> str:
    relax_function = tvm_compat.relax_function_type()
    names = [gv.name_hint for gv, f in mod.functions_items() if isinstance(f, relax_function)]
    if len(names) != 1:
        raise ValueError(
            "the function has no global_symbol and the module has several Relax functions; "
            "put it back with replace_function(mod, NAME, func)"
        )
    return names[0]
