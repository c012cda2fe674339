"""A whole model's tasks in turn: how far a budget of trials reaches (the tuning itself is
tested through ``tune`` in ``test_whole_model.py``)."""

from __future__ import annotations

from mlc_jupyter.tune.budget import Budget
from mlc_jupyter.tune.model_tasks import planned_tasks


def test_a_whole_model_budget_of_trials_reaches_the_largest_kernels_first():
    assert planned_tasks(Budget(16, None, False), [0.75, 0.25]) == 1
    assert planned_tasks(Budget(64, None, False), [0.5, 0.3, 0.2]) == 3
    assert planned_tasks(Budget(None, 60.0, False), [0.75, 0.25]) == 2
