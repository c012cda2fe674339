"""The course's ``ms`` (MetaSchedule imported as the book does): tuning as the book does it.

Every name is TVM 0.27's MetaSchedule except:

* ``ms.tune_tir(mod, target, work_dir, max_trials_global, num_trials_per_iter, space=...)`` runs
  the project's tuner (:func:`mlc_jupyter.tune.tune`: warm in-process workers, the work dir's
  database resumes) and returns the work dir's database, which also carries the
  :class:`~mlc_jupyter.tune.report.TuneResult` (``database.tune_result``). The course's target
  strings (``"llvm --num-cores=1"``) work; a GPU target without a GPU fails at once with the
  project's "no GPU" error instead of building candidates for minutes.
* ``ms.tir_integration.compile_tir(database, mod, target)`` returns the tuned schedule for the
  IRModule the book passes (stock 0.27 returns ``None`` for an IRModule: the stored workload
  gained the no-alias attribute) and fails with a message instead of returning ``None``; a
  record whose trace would link native code into the build is refused
  (:mod:`mlc_jupyter.compilation.foreign`).
* ``ms.relax_integration.tune_relax`` runs the project's tuner too.

In a notebook each of them shows the live progress ``%mlc_tune`` shows (:mod:`.progress`).
"""

from __future__ import annotations

import sys
from types import SimpleNamespace
from typing import Any

from ..compilation.foreign import check_trace
from ..errors import TuneError
from ..tune import tune
from ..tune.options import tuning_target
from ..tune.records import read_database
from ..tune.report import TuneProgress, TuneResult
from ..tune.tasks import collect_tasks
from ..tvm_compat import Schedule, metaschedule, prim_func_type, structural_equal, tvm
from .progress import progress_view


def __getattr__(name: str) -> Any:
    return getattr(metaschedule(), name)


class TunedDatabase:
    """The JSON database of a tuning work dir, plus the run's :class:`TuneResult`."""

    def __init__(self, result: TuneResult) -> None:
        self.tune_result = result
        self.database = read_database(result.work_dir)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.__dict__["database"], name)

    def __enter__(self) -> Any:
        return self.database.__enter__()

    def __exit__(self, *exc: Any) -> Any:
        return self.database.__exit__(*exc)

    def __repr__(self) -> str:
        return (
            f"<tuning database {self.tune_result.work_dir}: {self.tune_result.n_records} records>"
        )


def _space(space: Any) -> Any:
    return "default" if space in (None, "post-order-apply") else space


def tune_tir(
    mod: Any,
    target: Any,
    work_dir: str | None = None,
    max_trials_global: int = 64,
    *,
    num_trials_per_iter: int = 64,
    space: Any = None,
    seed: int | None = None,
    max_trials_per_task: int | None = None,
    **ignored: Any,
) -> TunedDatabase:
    """Tune a TensorIR module like the book's ``ms.tune_tir``; return its database."""
    trials = min(max_trials_global, max_trials_per_task or max_trials_global)
    return _tuned(mod, target, trials, num_trials_per_iter, work_dir, seed, _space(space))


def _tuned(
    mod: Any, target: Any, trials: int, per_iter: int, work_dir: Any, seed: Any, space: Any
) -> TunedDatabase:
    """Tune as the book's ``ms`` calls ask: ``trials`` in rounds of at most ``per_iter``."""
    view = progress_view()  # the live progress %mlc_tune shows, in a notebook
    result = tune(
        mod, target, trials=trials, per_iter=min(per_iter, trials), work_dir=work_dir,
        space=space, seed=seed, on_progress=view or _say_waiting,
        on_task=getattr(view, "task_started", None),
    )  # fmt: skip
    return TunedDatabase(result)


def _say_waiting(event: TuneProgress) -> None:
    """Without a view (a script), a run that waits for another run's work dir still says so,
    on stderr, in the words of ``%mlc_tune``'s progress line; the rest stays silent."""
    if event.waiting:
        print(event.waiting_text(), file=sys.stderr, flush=True)


def _normalised(mod: Any) -> Any:
    return collect_tasks(mod, None).workload


def _prim_func(mod: Any) -> Any:
    if isinstance(mod, prim_func_type()):
        return mod
    funcs = [f for _, f in mod.functions_items() if isinstance(f, prim_func_type())]
    if len(funcs) != 1:
        raise TuneError(
            f"compile_tir takes a module with one PrimFunc; this one has {len(funcs)}",
            hint="pass the function: compile_tir(database, mod['name'], target)",
        )
    return funcs[0]


def compile_tir(database: Any, mod: Any, target: Any) -> Any:
    """The best schedule of ``mod`` in ``database`` (a TensorIR ``Schedule``), never ``None``."""
    result: TuneResult | None = getattr(database, "tune_result", None)
    if result is not None and result.kind == "tir" and len(result.task_workloads) == 1:
        (workload,) = result.task_workloads.values()
        if result.trace is not None and structural_equal(_normalised(mod), workload):
            sch = Schedule(workload)
            result.trace.apply_to_schedule(sch, remove_postproc=False)
            return sch
    stock = metaschedule().tir_integration.compile_tir
    sch = stock(getattr(database, "database", database), _prim_func(mod), tuning_target(target))
    if sch is None:
        raise TuneError(
            "the tuning database holds no record for this module",
            hint="tune this very module first (ms.tune_tir) with the same work_dir",
        )
    check_trace(sch.trace, "the best record of the tuning database")
    return sch


def tune_relax(
    mod: Any,
    params: Any,
    target: Any,
    work_dir: str | None = None,
    max_trials_global: int = 64,
    *,
    num_trials_per_iter: int = 64,
    seed: int | None = None,
    **ignored: Any,
) -> TunedDatabase:
    """Tune every kernel of a Relax module like ``ms.relax_integration.tune_relax``."""
    if params:
        mod = tvm().relax.transform.BindParams("main", params)(mod)
    return _tuned(mod, target, max_trials_global, num_trials_per_iter, work_dir, seed, "default")


def _integration(name: str, **shims: Any) -> Any:
    """A stand-in for ``ms.<name>``: the shims above, then the stock module's names."""

    class Integration(SimpleNamespace):
        def __getattr__(self, attr: str) -> Any:
            return getattr(getattr(metaschedule(), name), attr)

    return Integration(**shims)


tir_integration = _integration("tir_integration", compile_tir=compile_tir, tune_tir=tune_tir)
relax_integration = _integration("relax_integration", tune_relax=tune_relax)
