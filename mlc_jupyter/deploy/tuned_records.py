"""Tuned records put into a model as it is built: each kernel a tuning run has measured gets
its best schedule from the run's database, the others keep their default schedules.

A kernel is found by its workload (the unscheduled kernel, as ``%mlc_tune`` stores it), so the
records of one model serve any other model, or ``torch.compile`` subgraph, that fuses the same
kernel.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..compilation.default_schedule import Prepared
from ..compilation.foreign import check_trace
from ..errors import DeployError
from ..tune.records import database_dirs, read_database
from ..tune.report import TuneResult
from ..tune.tasks import collect_tasks
from ..tvm_compat import IS_SCHEDULED_ATTR, ir_module_type


@dataclass(frozen=True)
class WithRecords:
    """A prepared model with tuned kernels in place: ``tuned`` names the kernels replaced."""

    mod: Any
    tuned: tuple[str, ...]


def work_dirs(records: Any) -> tuple[Path, ...]:
    """The tuning work dirs ``records`` names: a :class:`TuneResult`, a folder, or several (a
    whole model's result or work dir stands for its kernels' work dirs)."""
    if records is None:
        return ()
    if isinstance(records, (list, tuple)):
        return tuple(d for item in records for d in work_dirs(item))
    if isinstance(records, TuneResult):
        if records.task_work_dirs:  # a whole model's kernels keep a database each
            return tuple(dict.fromkeys(Path(d) for d in records.task_work_dirs.values()))
        return (Path(records.work_dir),)
    if isinstance(records, (str, Path)):
        return tuple(database_dirs(records))
    raise DeployError(
        f"records must be a %mlc_tune result or a tuning work dir, not {type(records).__name__}"
    )


def apply_records(prepared: Prepared, dirs: tuple[Path, ...], target: Any) -> WithRecords:
    """``prepared.mod`` with each kernel the databases of ``dirs`` hold replaced by its best
    schedule (the first database that has the kernel wins); a record whose trace would link
    code into the build is refused (:func:`~mlc_jupyter.compilation.foreign.check_trace`)."""
    databases = [read_database(d) for d in dirs]
    made = set(prepared.scheduled) | set(prepared.unscheduled)
    out = prepared.mod.clone() if databases else prepared.mod
    tuned = []
    for gv, _kernel in prepared.mod.functions_items():
        name = gv.name_hint
        if name not in made:
            continue
        workload = collect_tasks(ir_module_type()({name: prepared.fused[name]}), target).mods[0]
        for work_dir, database in zip(dirs, databases, strict=True):
            schedule = database.query_schedule(workload, target, workload_name="main")
            if schedule is None:
                continue
            check_trace(schedule.trace, f"the best record of {name} in {work_dir}")
            func = schedule.mod["main"].with_attr("global_symbol", name)
            out.update_func(out.get_global_var(name), func.with_attr(IS_SCHEDULED_ATTR, True))
            tuned.append(name)
            break
    return WithRecords(out, tuple(tuned))
