"""Turn what the user gave (a PrimFunc or a TensorIR module) into MetaSchedule tasks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import TuneError
from ..tvm_compat import NOALIAS_ATTR, prim_func_type, tvm


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
