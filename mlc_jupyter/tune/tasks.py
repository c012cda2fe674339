"""Turn what the user gave (a PrimFunc or a TensorIR module) into MetaSchedule tasks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..compilation.call import scalar_argument
from ..compilation.signatures import signatures
from ..errors import CallError, TuneError
from ..tvm_compat import NOALIAS_ATTR, is_scalar_param, prim_func_type, specialize_scalars, tvm


@dataclass
class Tasks:
    """The tasks of one tuning run and how to put the results back together."""

    kind: str  # "tir" (a Relax module is tuned by .whole_model.tune_model, kernel by kernel)
    workload: Any  # the IRModule that was tuned (PrimFuncs normalised, noalias added)
    names: list[str]  # task names, in task order
    mods: list[Any]  # one IRModule per task, its function named "main"
    weights: list[float]
    func_names: list[str]  # the name of each task's function in ``workload``


def _normalise_func(func: Any) -> Any:
    """A PrimFunc as MetaSchedule stores it: the no-alias attribute set, module with ``main``.

    Passing the module unnormalised is the ``compile_tir`` trap (the stored workload gains
    the no-alias attribute and no longer matches); doing it here, once, avoids it.
    """
    _tvm = tvm()
    if not (func.attrs and NOALIAS_ATTR in func.attrs):
        func = func.with_attr(NOALIAS_ATTR, True)
    func = func.with_attr("global_symbol", "main")
    return _tvm.IRModule({"main": func})


def _has_relax(mod: Any) -> bool:
    _tvm = tvm()
    return any(isinstance(f, _tvm.relax.Function) for _, f in mod.functions_items())


def is_relax_model(obj: Any) -> bool:
    """True for a Relax IRModule or an imported model (tuned by :func:`.whole_model.tune_model`)."""
    mod = getattr(obj, "mod", None) if not isinstance(obj, tvm().IRModule) else obj
    return isinstance(mod, tvm().IRModule) and _has_relax(mod)


def collect_tasks(mod: Any, target: Any) -> Tasks:
    """Split ``mod`` into tuning tasks, one per PrimFunc."""
    _tvm = tvm()
    if isinstance(mod, _tvm.relax.Function):
        mod = _tvm.IRModule({"main": mod})
    if isinstance(mod, prim_func_type()):
        mod = _tvm.IRModule({"main": mod})
    if not isinstance(mod, _tvm.IRModule):
        raise TuneError(
            f"cannot tune a {type(mod).__name__}: give a PrimFunc, a TensorIR IRModule "
            "or a Relax IRModule"
        )
    if _has_relax(mod):
        raise TuneError("a Relax module is tuned kernel by kernel: tune() hands it to tune_model()")
    names, mods, func_names = [], [], []
    functions = {}
    for gv, func in mod.functions_items():
        if isinstance(func, prim_func_type()):
            task_mod = _normalise_func(func)
            functions[gv.name_hint] = task_mod["main"]
            names.append(gv.name_hint)
            mods.append(task_mod)
            func_names.append(gv.name_hint)
    if not mods:
        raise TuneError("this module has no PrimFunc to tune")
    if len(mods) == 1:
        workload = mods[0]
    else:
        workload = _tvm.IRModule(
            {name: f.with_attr("global_symbol", name) for name, f in functions.items()}
        )
    return Tasks("tir", workload, names, mods, [1.0] * len(mods), func_names)


def bind_scalars(mod: Any, values: dict[str, Any]) -> tuple[Any, tuple[str, ...]]:
    """``mod`` (a PrimFunc or a TensorIR module) with its scalar parameters named in ``values``
    written in as constants (``tune(..., bind=...)``), and a note per kernel saying so.

    MetaSchedule measures candidates on arguments made from buffer shapes, so a kernel is tuned
    for one value of each scalar; the tuned kernel keeps that value and no longer takes it.
    """
    _tvm = tvm()
    single = isinstance(mod, prim_func_type())
    attrs = (mod.attrs or {}) if single else {}
    name = str(attrs["global_symbol"]) if "global_symbol" in attrs else "main"
    module = _tvm.IRModule({name: mod}) if single else mod
    if not isinstance(module, _tvm.IRModule) or _has_relax(module):
        raise TuneError(
            "bind fixes a kernel's scalar parameters: a model's kernels that take a scalar keep "
            "their default schedules",
            hint="tune such a kernel alone: tune(model['kernel'], bind={...})",
        )
    sigs = signatures(module)
    taken = {p.name for sig in sigs.values() for p in sig.params if p.scalar}
    unknown = sorted(set(values) - taken)
    if unknown:
        raise TuneError(
            f"bind names {', '.join(map(repr, unknown))}, which no kernel here takes as a "
            "scalar parameter",
            hint=f"its scalar parameters: {', '.join(sorted(taken))}"
            if taken
            else "it takes buffers only: tune it without bind",
        )
    funcs, notes = {}, []
    for gv, func in module.functions_items():
        sig = sigs.get(gv.name_hint)
        if sig is None or not isinstance(func, prim_func_type()):
            funcs[gv.name_hint] = func
            continue
        fixed = {}
        for index, param in enumerate(sig.params):
            if param.scalar and param.name in values:
                try:
                    fixed[param.name] = scalar_argument(sig, index, values[param.name])
                except CallError as err:
                    raise TuneError(f"bind: {err.message}") from None
        funcs[gv.name_hint] = specialize_scalars(func, fixed) if fixed else func
        if fixed:
            where = "" if single else f"{gv.name_hint}: "
            listed = ", ".join(f"{n} = {v!r}" for n, v in fixed.items())
            notes.append(
                f"{where}tuned for {listed}; the tuned kernel has "
                f"{'this value' if len(fixed) == 1 else 'these values'} written in and no longer "
                f"takes {', '.join(fixed)}"
            )
    bound = funcs[name] if single else _tvm.IRModule(funcs)
    return bound, tuple(notes)


def scalar_params(func: Any) -> list[Any]:
    """The scalar parameters of a PrimFunc (``alpha: T.float32``), in order."""
    return [p for p in func.params if is_scalar_param(p)]


def assemble_tir(tasks: Tasks, best_mods: dict[str, Any]) -> Any:
    """The tuned TensorIR module: each task's best schedule under its original name."""
    _tvm = tvm()
    if len(tasks.mods) == 1:
        return best_mods.get(tasks.names[0], tasks.mods[0])
    funcs = {}
    for name, task_mod in zip(tasks.names, tasks.mods, strict=False):
        func = best_mods.get(name, task_mod)["main"]
        funcs[name] = func.with_attr("global_symbol", name)
    return _tvm.IRModule(funcs)
