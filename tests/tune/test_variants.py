"""Epilogue variants: two convolutions of one shape with different epilogues are one family,
searched once, the search's best decisions replayed on the other (kept only where faster)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from model_support import residual_block
from text_support import unwrapped

from mlc_jupyter.compilation import build_module
from mlc_jupyter.compilation.default_schedule import prepare_model
from mlc_jupyter.display.tune import result_text
from mlc_jupyter.models import import_model
from mlc_jupyter.tune import tune
from mlc_jupyter.tune.model_plan import KernelTask, TaskGroup
from mlc_jupyter.tune.options import tuning_target
from mlc_jupyter.tune.records import read_database
from mlc_jupyter.tune.tasks import collect_tasks
from mlc_jupyter.tune.variants import join_variants, replay_decisions
from mlc_jupyter.tvm_compat import Schedule, structural_equal, tvm


@pytest.fixture(scope="module")
def block():
    model = residual_block()
    return model, import_model(model, torch.randn(1, 16, 16, 16))


@pytest.fixture(scope="module")
def kernels(block):
    """The block's kernels as a whole-model tune plans them: workload, default trace, share."""
    target = tuning_target(None)
    prepared = prepare_model(block[1].mod, target)
    tasks = {}
    for name, trace in prepared.traces.items():
        source = prepared.fused[name]
        workload = collect_tasks(tvm().IRModule({name: source}), target).mods[0]
        tasks[name] = KernelTask(name, source, None, trace, workload=workload)
    convs = sorted(name for name in tasks if "conv2d" in name)
    return target, tasks, convs


def test_two_convolutions_of_one_shape_with_other_epilogues_are_one_family(kernels):
    _, tasks, convs = kernels
    assert len(convs) == 2 and any(n.endswith("relu") for n in convs)
    groups = [TaskGroup([tasks[n]]) for n in (*convs, *(n for n in tasks if n not in convs))]
    families = join_variants(groups)
    (family,) = [g for g in families if g.lead.name == convs[0]]
    assert [v.lead.name for v in family.variants] == [convs[1]]
    assert len(families) == len(groups) - 1  # every other kernel stays on its own


def test_the_default_decisions_of_one_replayed_on_the_other_give_its_default_schedule(kernels):
    target, tasks, (lead, variant) = kernels
    replay = replay_decisions(
        tasks[lead].workload, tasks[lead].trace, tasks[variant].workload, target, "default"
    )
    assert replay.mod is not None, replay.reason
    own = Schedule(tasks[variant].workload)
    tasks[variant].trace.apply_to_schedule(own, remove_postproc=False)
    assert structural_equal(replay.mod, own.mod)  # the same tile rule, so the same schedule
    again = Schedule(tasks[variant].workload)
    replay.trace.apply_to_schedule(again, remove_postproc=False)  # what the database keeps
    assert structural_equal(again.mod, replay.mod)


def test_decisions_that_do_not_fit_a_kernel_are_refused_with_a_reason(kernels):
    target, tasks, (lead, _) = kernels
    other = next(n for n in tasks if "conv2d" not in n)
    replay = replay_decisions(
        tasks[lead].workload, tasks[lead].trace, tasks[other].workload, target, "default"
    )
    assert replay.mod is None and replay.reason


@pytest.mark.slow
def test_one_search_is_replayed_on_the_epilogue_variant(block, tmp_path):
    model, imported = block
    result = tune(imported, trials=16, per_iter=8, work_dir=tmp_path)
    rows = {row.name: row for row in result.model_tasks}
    searched = [row for row in rows.values() if row.new > 0]
    assert len(searched) == 1  # the budget went to one convolution, for both
    (lead,) = searched
    (variant,) = lead.replayed_on
    replayed = rows[variant]
    assert replayed.replayed_from == lead.name and replayed.new == 0 and replayed.trials == 0
    assert replayed.before_s and replayed.after_s  # the replay was timed against its default
    assert replayed.kept in ("tuned", "default")
    assert result.trials_new == lead.new
    if replayed.kept == "tuned":  # kept in the variant's own database, for later builds
        records = read_database(Path(result.task_work_dirs[variant]))
        assert len(records.get_all_tuning_records()) == 1
    text = unwrapped(result_text(result))
    assert f"replayed on {variant}" in text and f"replays {lead.name}" in text
    x = torch.randn(1, 16, 16, 16, generator=torch.Generator().manual_seed(1))
    out = build_module(result)(x.numpy())
    np.testing.assert_allclose(out, model(x).detach().numpy(), rtol=1e-4, atol=1e-4)
