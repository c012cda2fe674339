"""The search strategy: first rounds sampled at random, then MetaSchedule's evolutionary search.

Before its first measurements the cost model knows nothing, yet MetaSchedule's evolutionary
search spends a whole round on it: it samples a population of 512 schedules and mutates it for
four generations, each mutant replayed and post-processed (on a GPU that means lowering it to
check its threads and memory), to pick the candidates an untrained model likes, which is to
say candidates at random. On a GPU target that round costs far more host time than measuring
its candidates. :class:`RandomFirstRound` samples the first round's worth of candidates straight
from the design space (MetaSchedule's ``ReplayTrace``: random decisions, the same
postprocessors) in two rounds: :data:`FIRST_ROUND` candidates, so that the first one is built
and timed within seconds of the start on any host, then the rest of a full batch. From then on,
with those records in the database and the cost model trained on them, the search is
MetaSchedule's evolutionary search unchanged. A task with records in the database (a resumed
run) has no random rounds: its evolutionary search starts from those records, and the same seed
would only sample the first run's candidates again.

This module imports TVM at import time; import it lazily.
"""

from __future__ import annotations

from typing import Any

from ...tvm_compat import derived_object, metaschedule

ms = metaschedule()

#: Candidates of a task's very first round (the rest of its first batch follows in a second).
FIRST_ROUND = 8


def plan_rounds(max_trials: int, per_iter: int, measured_before: bool) -> list[tuple[str, int]]:
    """The phases of a task's search: ``("random", n)`` rounds, then ``("evolutionary", n)``
    for the trials left (``per_iter`` a round)."""
    if measured_before:
        return [("evolutionary", max_trials)] if max_trials > 0 else []
    batch = min(per_iter, max_trials)
    first = min(FIRST_ROUND, batch)
    plan = [("random", first)] if first > 0 else []
    if batch > first:
        plan.append(("random", batch - first))
    if max_trials > batch:
        plan.append(("evolutionary", max_trials - batch))
    return plan


@derived_object
class RandomFirstRound(ms.search_strategy.PySearchStrategy):
    """A task's first batch sampled at random, the rest MetaSchedule's evolutionary search.

    ``plan`` holds the phases (:func:`plan_rounds`); ``phase`` names the one in progress
    (``"random"``, ``"evolutionary"``, or ``"done"``).
    """

    def __init__(self) -> None:
        super().__init__()
        self.strategies = {
            "first": ms.search_strategy.ReplayTrace(),
            "rest": ms.search_strategy.ReplayTrace(),
            "evolutionary": ms.search_strategy.EvolutionarySearch(),
        }
        self.mod: Any = None
        self.plan: list[tuple[str, int]] = []
        self.phases: list[Any] = []  # the strategy of each phase of the plan, pre-tuned
        self.current = 0

    @property
    def phase(self) -> str:
        return self.plan[self.current][0] if self.current < len(self.plan) else "done"

    def _initialize_with_tune_context(self, context: Any) -> None:
        self.mod = context.mod
        for strategy in self.strategies.values():
            strategy._initialize_with_tune_context(context)

    def pre_tuning(
        self,
        max_trials: int,
        num_trials_per_iter: int,
        design_spaces: list[Any],
        database: Any = None,
        cost_model: Any = None,
    ) -> None:
        measured_before = database is not None and _has_records(database, self.mod)
        self.plan = plan_rounds(max_trials, num_trials_per_iter, measured_before)
        self.phases = []
        self.current = 0
        randoms = iter([self.strategies["first"], self.strategies["rest"]])
        for kind, trials in self.plan:
            if kind == "random":
                strategy, per_iter = next(randoms), trials  # one round
            else:
                strategy, per_iter = self.strategies["evolutionary"], num_trials_per_iter
            strategy.pre_tuning(trials, per_iter, design_spaces, database, cost_model)
            self.phases.append(strategy)

    def post_tuning(self) -> None:
        for strategy in self.phases:
            strategy.post_tuning()

    def generate_measure_candidates(self) -> list[Any] | None:
        if self.current >= len(self.phases):
            return None
        return self.phases[self.current].generate_measure_candidates()

    def notify_runner_results(self, measure_candidates: list[Any], results: list[Any]) -> None:
        if self.current >= len(self.phases):
            return
        self.phases[self.current].notify_runner_results(measure_candidates, results)
        if self.phase == "random":
            self.current += 1

    def clone(self) -> Any:
        return RandomFirstRound()


def _has_records(database: Any, mod: Any) -> bool:
    """Whether ``database`` holds a measured record of the task ``mod``."""
    if not database.has_workload(mod):
        return False
    return bool(database.get_top_k(database.commit_workload(mod), 1))
