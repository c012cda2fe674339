"""The search strategy: a first round sampled at random, then MetaSchedule's evolutionary search.

Before its first measurements the cost model knows nothing, yet MetaSchedule's evolutionary
search spends a whole round on it: it samples a population of 512 schedules and mutates it for
four generations, each mutant replayed and post-processed (on a GPU that means lowering it to
check its threads and memory), to pick the candidates an untrained model likes, which is to
say candidates at random. On a GPU target that round costs far more host time than measuring
its candidates. :class:`RandomFirstRound` samples the first round straight from the design space
(MetaSchedule's ``ReplayTrace``: random decisions, the same postprocessors), so the first
candidate is built and timed after a fraction of a second of search; from the second round on,
with the first round's records in the database and the cost model trained on them, the
search is MetaSchedule's evolutionary search unchanged. A task with records in the database
(a resumed run) has no random round: its evolutionary search starts from those records, and
the same seed would only sample the first run's first round again.

This module imports TVM at import time; import it lazily.
"""

from __future__ import annotations

from typing import Any

from ..tvm_compat import derived_object, metaschedule

ms = metaschedule()


@derived_object
class RandomFirstRound(ms.search_strategy.PySearchStrategy):
    """The first round of a task sampled at random, the rest MetaSchedule's evolutionary search.

    The task scheduler's ``num_trials_per_iter`` sizes both: the first round is a full batch.
    ``phase`` is ``"random"`` until that round's results came back, then ``"evolutionary"``.
    """

    def __init__(self) -> None:
        super().__init__()
        self.first = ms.search_strategy.ReplayTrace()
        self.evolve = ms.search_strategy.EvolutionarySearch()
        self.phase = "random"
        self.first_size = 0
        self.mod: Any = None
        self.tuning: list[Any] = []  # the strategies pre-tuned for this run

    def _initialize_with_tune_context(self, context: Any) -> None:
        self.mod = context.mod
        self.first._initialize_with_tune_context(context)
        self.evolve._initialize_with_tune_context(context)

    def pre_tuning(
        self,
        max_trials: int,
        num_trials_per_iter: int,
        design_spaces: list[Any],
        database: Any = None,
        cost_model: Any = None,
    ) -> None:
        measured_before = database is not None and _has_records(database, self.mod)
        self.first_size = 0 if measured_before else min(max_trials, num_trials_per_iter)
        self.phase = "evolutionary" if measured_before else "random"
        self.tuning = []
        if self.first_size:
            self.first.pre_tuning(
                self.first_size, self.first_size, design_spaces, database, cost_model
            )
            self.tuning.append(self.first)
        if max_trials > self.first_size:
            self.evolve.pre_tuning(
                max_trials - self.first_size, num_trials_per_iter, design_spaces, database,
                cost_model,
            )  # fmt: skip
            self.tuning.append(self.evolve)

    def post_tuning(self) -> None:
        for strategy in self.tuning:
            strategy.post_tuning()

    def _current(self) -> Any | None:
        strategy = self.first if self.phase == "random" else self.evolve
        return strategy if strategy in self.tuning else None

    def generate_measure_candidates(self) -> list[Any] | None:
        strategy = self._current()
        return None if strategy is None else strategy.generate_measure_candidates()

    def notify_runner_results(self, measure_candidates: list[Any], results: list[Any]) -> None:
        strategy = self._current()
        if strategy is not None:
            strategy.notify_runner_results(measure_candidates, results)
        self.phase = "evolutionary"

    def clone(self) -> Any:
        return RandomFirstRound()


def _has_records(database: Any, mod: Any) -> bool:
    """Whether ``database`` holds a measured record of the task ``mod``."""
    if not database.has_workload(mod):
        return False
    return bool(database.get_top_k(database.commit_workload(mod), 1))
