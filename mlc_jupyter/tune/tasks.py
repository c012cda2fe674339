"""Turn what the user gave (a PrimFunc or a TensorIR module) into MetaSchedule tasks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..compilation.call import scalar_argument
from ..compilation.signatures import signatures
from ..errors import CallError, TuneError
from ..tvm_compat import (
    NOALIAS_ATTR,
    Schedule,
    is_scalar_param,
    prim_func_type,
    specialize_scalars,
    tvm,
    var_dtype,
)


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
            notes.append(("" if single else f"{gv.name_hint}: ") + bound_note(fixed, kept=False))
    bound = funcs[name] if single else _tvm.IRModule(funcs)
    return bound, tuple(notes)


def bound_note(fixed: dict[str, Any], kept: bool, replayed: bool = True) -> str:
    """What a result says of the values its kernel was tuned for (``replayed=False``: no
    candidate beat the kernel as written, which the result keeps)."""
    listed = ", ".join(f"{n} = {v!r}" for n, v in fixed.items())
    names = ", ".join(fixed)
    if kept and not replayed:
        return (
            f"tuned for {listed}; no candidate beat the kernel as written, which is kept and "
            f"still takes {names}"
        )
    if kept:
        return (
            f"tuned for {listed}; the tuned kernel still takes {names} (the schedule found "
            "replays on the kernel as written)"
        )
    values = "this value" if len(fixed) == 1 else "these values"
    return (
        f"tuned for {listed}; the tuned kernel has {values} written in and no longer takes {names}"
    )


def with_scalars_kept(original: Any, trace: Any, values: dict[str, Any]) -> tuple[Any, str] | None:
    """The tuned schedule (``trace``, found on the kernel with ``values`` written in) replayed on
    ``original``, a PrimFunc whose bound scalars are all floats: a float is a value in the
    arithmetic, never a loop extent or an index, so the schedule does not depend on it and the
    tuned kernel can keep taking it. ``trace=None`` gives ``original`` as written (no candidate
    beat it). Returns that module and the result's note, or ``None`` when that does not hold or
    the trace does not replay."""
    if not isinstance(original, prim_func_type()):
        return None
    bound = [p for p in scalar_params(original) if p.name in values]
    if not bound or any(not var_dtype(p).startswith("float") for p in bound):
        return None
    try:
        sch = Schedule(_normalise_func(original))
        if trace is not None:
            trace.apply_to_schedule(sch, remove_postproc=False)
    except Exception:  # noqa: BLE001 - any TVM failure: the kernel keeps the values written in
        return None
    fixed = {p.name: float(values[p.name]) for p in bound}  # checked by bind_scalars
    return sch.mod, bound_note(fixed, kept=True, replayed=trace is not None)


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
