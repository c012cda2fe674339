"""Relax functions that return a dataflow variable, made to return the output bound to it.

The book's FX translator (section 5.6) emits ``gv = bb.emit_output(lv)`` and then returns
``lv``, a variable of the dataflow block, not ``gv``. TVM's verifier calls that ill-formed but its
own builds tolerate it; FuseOps does not: it fuses ``lv`` away and leaves ``return lv`` pointing at
nothing ("Var lv6 is not defined"). :func:`return_outputs` rewrites the return to the block's
output for ``lv`` (adding one when the block has none), which is what the code meant.
"""

from __future__ import annotations

from typing import Any

from ..tvm_compat import tvm, var_name


def return_outputs(mod: Any) -> Any:
    """``mod`` with every Relax function returning its dataflow variables through outputs
    (``mod`` itself when no function returns a dataflow variable)."""
    relax = tvm().relax
    out = None
    for gv, func in mod.functions_items():
        if not isinstance(func, relax.Function) or not isinstance(func.body, relax.SeqExpr):
            continue
        fixed = _return_outputs(relax, func)
        if fixed is not None:
            out = mod.clone() if out is None else out
            out.update_func(gv, fixed)
    return mod if out is None else relax.transform.Normalize()(out)


def _return_outputs(relax: Any, func: Any) -> Any | None:
    seq = func.body
    leaked = _dataflow_vars(relax, seq.body)
    if not leaked:
        return None
    blocks = list(seq.blocks)
    outputs: dict[Any, Any] = {}
    for index, block in enumerate(blocks):
        if not isinstance(block, relax.DataflowBlock):
            continue
        bindings = list(block.bindings)
        bound = {b.var for b in bindings}
        for binding in bindings:
            value = binding.value
            if not isinstance(binding.var, relax.DataflowVar) and value in leaked:
                outputs.setdefault(value, binding.var)
        added = [
            relax.VarBinding(relax.Var(f"{var_name(v)}_out", v.ty), v)
            for v in leaked
            if v in bound and v not in outputs
        ]
        for binding in added:
            outputs[binding.value] = binding.var
        if added:
            blocks[index] = relax.DataflowBlock(bindings + added, block.span)
    result = _substitute(relax, seq.body, outputs)
    body = relax.SeqExpr(blocks, result, seq.span)
    return relax.Function(func.params, body, func.ret_ty, func.is_pure, func.attrs, func.span)


def _dataflow_vars(relax: Any, expr: Any) -> list[Any]:
    if isinstance(expr, relax.DataflowVar):
        return [expr]
    if isinstance(expr, relax.Tuple):
        return [v for field in expr.fields for v in _dataflow_vars(relax, field)]
    return []


def _substitute(relax: Any, expr: Any, outputs: dict[Any, Any]) -> Any:
    if isinstance(expr, relax.DataflowVar):
        return outputs.get(expr, expr)
    if isinstance(expr, relax.Tuple):
        return relax.Tuple([_substitute(relax, f, outputs) for f in expr.fields], expr.span)
    return expr
