"""MetaSchedule's builder, replaced by one that lives in the kernel's own process.

MetaSchedule's ``LocalBuilder`` starts fresh worker processes every round (each one re-imports
TVM and its tensor intrinsics) and exports and links a shared library per candidate. This builder
only files each candidate; the runner compiles the first of a round just before timing it, so the
first measurement comes after one build, then compiles the rest of the round on every core at
once (:func:`compile_all`). For RPC devices it compiles and exports the candidates instead, on every host core at once.

This module imports TVM at import time; import it lazily.
"""

from __future__ import annotations

import traceback
from concurrent.futures import Future, wait
from typing import Any

from ...compilation import tir_pipeline
from ...tvm_compat import compile as compile_module
from ...tvm_compat import (
    derived_object,
    metaschedule,
    remove_weight_layout_rewrite,
    structural_hash,
)
from ..budget import Deadline
from .run_state import KNOWN_PREFIX, MEMORY_PREFIX, Shared, StopTuning
from .threads import compile_pool

ms = metaschedule()


def build_candidate(mod: Any, target: Any) -> Any:
    """Compile one candidate as MetaSchedule's builder would, in this process, lowered as a
    build lowers it (:func:`.compilation.tir_pipeline`)."""
    return compile_module(remove_weight_layout_rewrite(mod), target, tir_pipeline(target))


def _workload_key(mod: Any) -> str:
    """The name of the task a candidate module belongs to (its first PrimFunc's name)."""
    for gv, _ in mod.functions_items():
        return gv.name_hint
    return "main"


class Pending:
    """A candidate the builder accepted and the runner compiles: alone before the first
    measurement of a batch, then together with the rest of the batch (:func:`compile_all`)."""

    __slots__ = ("future", "mod", "target")

    def __init__(self, mod: Any, target: Any) -> None:
        self.mod = mod
        self.target = target
        self.future: Future | None = None

    def result(self) -> Any:
        """The compiled module (raises what compiling raised)."""
        if self.future is None or self.future.cancelled():
            return build_candidate(self.mod, self.target)
        return self.future.result()


def compile_all(modules: dict[str, Any], cores: int, deadline: Deadline | None = None) -> None:
    """Compile every pending candidate in ``modules`` on ``cores`` threads and wait for all,
    or until the run's ``deadline``: then the compiles not started are cancelled."""
    pending = [m for m in modules.values() if isinstance(m, Pending) and m.future is None]
    if not pending:
        return
    executor = compile_pool(cores)
    for item in pending:
        item.future = executor.submit(build_candidate, item.mod, item.target)
    timeout = max(0.0, deadline.left_s()) if deadline is not None and deadline.limited else None
    _, not_done = wait([item.future for item in pending], timeout=timeout)
    for future in not_done:
        future.cancel()


def build_and_export(mod: Any, target: Any, path: str) -> str:
    """Compile one candidate and export it as a shared library at ``path`` (for RPC)."""
    build_candidate(mod, target).export_library(path)
    return path


@derived_object
class InProcessBuilder(ms.builder.PyBuilder):
    """Compile candidates in this process; keep them in memory (or export them for RPC, on
    ``cores`` threads at once)."""

    def __init__(self, shared: Shared, export_dir: str | None = None, cores: int = 1) -> None:
        super().__init__()
        self.shared = shared
        self.export_dir = export_dir
        self.cores = cores

    def build(self, build_inputs: list[Any]) -> list[Any]:
        shared = self.shared
        if shared.stop.is_set():
            raise StopTuning("interrupted")
        results: list[Any] = []
        exports: dict[int, Future] = {}
        for item in build_inputs:
            if shared.known:
                digest = int(structural_hash(item.mod))
                if digest in shared.known:
                    key = f"{KNOWN_PREFIX}{digest}"
                    shared.known_hits.add(key)
                    results.append(ms.builder.BuilderResult(key, None))
                    continue
            number = next(shared.counter)
            if self.export_dir is None:
                # Compiled by the runner just before it is timed: the first measurement
                # comes after one build instead of after the whole batch.
                key = f"{MEMORY_PREFIX}{number}:{_workload_key(item.mod)}"
                shared.modules[key] = Pending(item.mod, item.target)
                results.append(ms.builder.BuilderResult(key, None))
                continue
            path = f"{self.export_dir}/candidate_{number}.so"
            exports[len(results)] = compile_pool(self.cores).submit(
                build_and_export, item.mod, item.target, path
            )
            results.append(None)
        for index, future in exports.items():
            try:
                results[index] = ms.builder.BuilderResult(future.result(), None)
            except Exception as err:  # noqa: BLE001 - reported to the user, not dropped
                shared.note_error("build", str(err) or traceback.format_exc())
                results[index] = ms.builder.BuilderResult(None, str(err) or type(err).__name__)
        return results
