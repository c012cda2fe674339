"""MetaSchedule tuning: one entry, :func:`tune`, for a kernel or a whole model.

A kernel (a PrimFunc or a TensorIR module) is tuned by :func:`.kernel.tune_kernel`; a Relax model
(or an imported one) kernel by kernel by :func:`.whole_model.tune_model`, which tunes each with
``tune_kernel``. Both search as one :class:`.options.SearchOptions` says, within one
:class:`.budget.Budget`.

Importing this package does not import TVM: the two implementations import TVM and MetaSchedule
at import time and load on the first :func:`tune`; :func:`top_records` imports TVM when called.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from .budget import DEFAULT_TIME_S, budget_for
from .options import SearchOptions
from .records import Record, top_records
from .report import ModelTask, TuneProgress, TuneResult
from .rpc import list_devices
from .spaces.choice import SPACE_NAMES
from .tasks import is_relax_model

__all__ = [
    "DEFAULT_TIME_S",
    "SPACE_NAMES",
    "ModelTask",
    "Record",
    "TuneProgress",
    "TuneResult",
    "list_devices",
    "top_records",
    "tune",
]


def tune(
    mod: Any,
    target: Any = None,
    *,
    trials: int | None = None,
    time: str | float | None = None,
    per_iter: int | None = None,
    work_dir: str | Path | None = None,
    fresh: bool = False,
    seed: int | None = None,
    space: Any = "default",
    rpc: str | None = None,
    on_progress: Callable[[TuneProgress], None] | None = None,
    baseline: bool = True,
    func: str | None = None,
    on_task: Callable[[int, int, ModelTask], None] | None = None,
    bind: dict[str, Any] | None = None,
    wait: bool = True,
) -> TuneResult:
    """Tune ``mod`` with MetaSchedule for ``trials`` measured candidates in all, for ``time``
    (``"10m"``, or seconds), or by default for at most :data:`~.budget.DEFAULT_TIME_S` or until
    the search has converged (:mod:`.budget`).

    ``space`` is ``"default"`` (the BLIS-like :mod:`.spaces.matmul` for matmul-like CPU kernels,
    the direct-convolution :mod:`.spaces.conv` for NHWC convolutions, pooling and means on CPUs,
    MetaSchedule's CUDA or tensor-core space on GPUs, MetaSchedule's default space for the rest:
    :mod:`.spaces.choice`), ``"metaschedule"``, ``"matmul"``, ``"conv"`` or a schedule function. The work dir's JSON database is the truth: a second call with the same workload and
    work dir measures only the trials still missing (``fresh=True`` starts over, the old database
    moved into ``previous-<time>/``). One run writes to a work dir at a time: a second waits for
    it and its progress says so (``wait=False``: fails at once, naming the run). Ctrl-C, or a
    ``KeyboardInterrupt`` raised by ``on_progress``, ends the run after the batch in flight,
    keeps every record and returns the best so far (``interrupted=True``).

    A kernel: ``baseline=False`` skips timing the untuned workload. A Relax module (or an
    imported model) is tuned kernel by kernel, the budget split by each kernel's share of the
    model's latency: ``func`` tunes one of its kernels, ``on_task(index, total, task)`` hears when
    each starts.

    A kernel with scalar parameters (``alpha: T.float32``) is tuned for the values ``bind`` gives
    (``{"alpha": 2.0}``): MetaSchedule measures candidates on buffers only, so each value is
    written into the kernel for the search (``PrimFunc.specialize``). The tuned kernel takes its
    float scalars again (the schedule replayed on the kernel as written); an integer stays
    written in (the result's ``notes`` say which). A model's kernels that take a scalar keep
    their default schedules.
    """
    budget = budget_for(trials, time)
    search = SearchOptions(per_iter, seed, space, rpc, on_progress, wait)
    if is_relax_model(mod):
        if bind:
            from .tasks import bind_scalars  # deferred: imports TVM

            bind_scalars(mod, bind)  # refuses: a model's scalars are not bound
        from .whole_model import tune_model  # deferred: imports TVM and MetaSchedule

        return tune_model(
            mod, target, budget, search, func=func, work_dir=work_dir, fresh=fresh,
            on_task=on_task,
        )  # fmt: skip
    from .kernel import tune_kernel  # deferred: imports TVM and MetaSchedule

    return tune_kernel(
        mod, target, budget, search, work_dir=work_dir, fresh=fresh, baseline=baseline, bind=bind
    )
