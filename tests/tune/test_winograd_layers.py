"""A model's tuning times each way of a 3x3 layer (direct, the Winograd tiles in reach) and
computes it the fastest way: ResNet-18's 7x7x512 layer (which the build computes directly; not
the first layer, whose input transpose the build folds) is timed alone each way, a way faster
alone is timed again in the whole model, the answer is kept in the work dir (a resumed run makes
the same plan without timing again), the plan's kernels follow it, and the tuned model agrees
with PyTorch whichever way the layer went."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from model_support import torch_seed

from mlc_jupyter.compilation import build_module, winograd
from mlc_jupyter.compilation.default_schedule import prepare_model, winograd_candidates
from mlc_jupyter.compilation.targets import resolve_target
from mlc_jupyter.models import import_model
from mlc_jupyter.tune import tune, winograd_layers
from mlc_jupyter.tune.model_plan import LAYER_WAYS, SHARES_FILE, plan_model
from mlc_jupyter.tune.timing import KEEP_MARGIN
from mlc_jupyter.tvm_compat import prim_func_type

#: ResNet-18's last 3x3 stride-1 layer: the build computes it directly (its compile time).
LAYER = "out 1x7x7x512, weight 3x3x512x512, padding 1,1,1,1"


@pytest.fixture(scope="module")
def layer():
    """Two 3x3 convolutions on 1x512x7x7, each with batch norm and ReLU (the first one reads
    the model's input), imported, and the model's output."""
    from torch import nn

    def block():
        conv = nn.Conv2d(512, 512, 3, 1, 1, bias=False)
        norm = nn.BatchNorm2d(512)
        norm.running_mean.uniform_(-0.1, 0.1)
        norm.running_var.uniform_(0.5, 1.5)
        return [conv, norm, nn.ReLU()]

    torch_seed(7)
    model = nn.Sequential(*block(), *block()).eval()
    x = torch.randn(1, 512, 7, 7, generator=torch.Generator().manual_seed(8))
    with torch.no_grad():
        expected = model(x).numpy()
    return x.numpy(), expected, import_model(model, x)


def _tiles(mod):
    """The tiles of the Winograd kernels of ``mod`` (layers of one shape share a kernel)."""
    return sorted(
        winograd.tile_of(f)
        for _, f in mod.functions_items()
        if isinstance(f, prim_func_type()) and winograd.tile_of(f) is not None
    )


def test_a_layer_with_more_than_one_way_is_a_question_once_per_shape(layer):
    _, _, imported = layer
    assert list(winograd_candidates(imported.mod, resolve_target("llvm"))) == [LAYER]


def test_a_layer_is_timed_each_way_and_changed_only_where_clearly_faster(layer):
    _, _, imported = layer
    [choice] = winograd_layers.choose_layers(imported.mod, resolve_target("llvm"))
    # F(4x4) reaches outputs of 28x28 and more only: direct or F(2x2)
    assert choice.key == LAYER and choice.build == winograd.DIRECT
    assert set(choice.seconds) == {winograd.DIRECT, 2} and min(choice.seconds.values()) > 0
    direct_s, f2_s = choice.seconds[winograd.DIRECT], choice.seconds[2]
    assert f"direct {direct_s * 1e6:.0f} us, F(2x2) {f2_s * 1e6:.0f} us" in choice.note()
    if f2_s >= direct_s * (1 - KEEP_MARGIN):  # not faster alone: the model is not timed
        assert choice.in_model is None and winograd_layers.chosen([choice]) == {}
        return
    # faster alone: the whole model is timed both ways, and decides
    model = choice.in_model
    assert model is not None and set(model) == {winograd.DIRECT, 2} and min(model.values()) > 0
    wanted = model[2] < model[winograd.DIRECT] * (1 - KEEP_MARGIN)
    assert winograd_layers.chosen([choice]) == ({LAYER: 2} if wanted else {})
    assert (
        f"the whole model, in turns: direct {model[winograd.DIRECT] * 1e3:.3f} ms" in choice.note()
    )


def test_the_whole_model_is_timed_as_built_and_with_the_layer_changed(layer):
    _, _, imported = layer
    built = winograd_layers.LayerChoice(LAYER, winograd.DIRECT)
    model = winograd_layers.time_in_model(imported.mod, resolve_target("llvm"), built, 2)
    assert model is not None and set(model) == {winograd.DIRECT, 2}
    # two 7x7x512 convolutions: a few milliseconds a call either way
    assert all(1e-4 < seconds < 1.0 for seconds in model.values())


def test_the_build_s_way_stays_unless_another_is_clearly_faster():
    close = winograd_layers.LayerChoice(LAYER, 4, {0: 3e-4, 2: 1.99e-4, 4: 2e-4})
    assert close.tile == 4 and winograd_layers.chosen([close]) == {}
    assert close.note().startswith(f"{LAYER}: kept as built (the build's: F(4x4);")
    faster = winograd_layers.LayerChoice(LAYER, 4, {0: 1e-4, 2: 3e-4, 4: 2e-4})
    assert faster.tile == 0 and faster.note().startswith(f"{LAYER}: now direct")
    untimed = winograd_layers.LayerChoice(LAYER, 0, {0: None, 2: 1e-4})
    assert untimed.tile == 0 and "direct not timed" in untimed.note()


def test_a_way_faster_alone_is_taken_only_where_the_model_is_clearly_faster_with_it():
    alone = {0: 1.0e-3, 2: 0.6e-3}
    level = winograd_layers.LayerChoice(LAYER, 0, alone, in_model={0: 10.0e-3, 2: 9.9e-3})
    assert level.fastest_alone == 2 and level.tile == 0
    assert winograd_layers.chosen([level]) == {}
    assert level.note() == (
        f"{LAYER}: kept as built (the build's: direct; alone, in turns: direct 1000 us, "
        "F(2x2) 600 us; the whole model, in turns: direct 10.000 ms, F(2x2) 9.900 ms)"
    )
    faster = winograd_layers.LayerChoice(LAYER, 0, alone, in_model={0: 10.0e-3, 2: 9.0e-3})
    assert faster.tile == 2 and faster.note().startswith(f"{LAYER}: now F(2x2)")
    # a model that cannot run here (inputs it cannot make) leaves the answer alone
    untimed = winograd_layers.LayerChoice(LAYER, 0, alone)
    assert untimed.tile == 2


def test_a_layer_the_model_was_timed_with_two_ways_has_a_way_not_taken_to_tune_too():
    alone = {0: 1.0e-3, 2: 0.6e-3}
    level = winograd_layers.LayerChoice(LAYER, 0, alone, in_model={0: 10.0e-3, 2: 9.9e-3})
    assert level.way_not_taken == 2 and winograd_layers.ways_not_taken([level]) == {LAYER: 2}
    # F(2x2) taken, the model clearly faster with it: the build's way is the one not taken
    faster = winograd_layers.LayerChoice(LAYER, 0, alone, in_model={0: 10.0e-3, 2: 9.0e-3})
    assert faster.tile == 2 and faster.way_not_taken == 0
    # faster alone than the build's way or not timed in the model: no way not taken
    assert winograd_layers.LayerChoice(LAYER, 0, alone).way_not_taken is None
    slower = winograd_layers.LayerChoice(LAYER, 0, {0: 0.6e-3, 2: 1e-3})
    assert slower.way_not_taken is None and winograd_layers.ways_not_taken([slower]) == {}


def test_the_answers_come_back_from_the_work_dir_as_they_were_found():
    choices = [
        winograd_layers.LayerChoice(LAYER, 0, {0: 1e-3, 2: 6e-4}, in_model={0: 1e-2, 2: 9.9e-3}),
        winograd_layers.LayerChoice("other", 4, {0: 3e-4, 2: None, 4: 2e-4}),
    ]
    saved = json.loads(json.dumps(winograd_layers.as_saved(choices)))
    assert winograd_layers.choose_layers(None, None, saved) == choices


def test_the_plan_keeps_its_answer_and_a_resumed_run_takes_it_without_timing(
    layer, tmp_path, monkeypatch
):
    _, _, imported = layer
    target = resolve_target("llvm")
    saved = {LAYER: {"build": 0, "seconds": {"0": 2e-3, "2": 1e-3}}}  # as a run before found
    (tmp_path / SHARES_FILE).write_text(json.dumps({"kernels": {}, LAYER_WAYS: saved}))

    def timed(*_args):
        raise AssertionError("a resumed plan timed a layer again")

    monkeypatch.setattr(winograd_layers, "in_turns", timed)
    plan = plan_model(imported.mod, target, None, imported, tmp_path)
    assert _tiles(plan.prepared) == [2] and _tiles(plan.default_build) == []
    assert any(t.name.startswith("fused_conv2d_winograd") for t in plan.tasks)
    assert plan.notes[0].startswith(f"{LAYER}: now F(2x2)")
    kept = json.loads((tmp_path / SHARES_FILE).read_text())
    assert kept[LAYER_WAYS] == saved and set(kept["kernels"]) == {t.name for t in plan.tasks}


def test_tuning_one_kernel_leaves_the_build_s_layers_as_they_are(layer, tmp_path):
    _, _, imported = layer
    target = resolve_target("llvm")
    name = next(
        gv.name_hint
        for gv, f in prepare_model(imported.mod, target).mod.functions_items()
        if isinstance(f, prim_func_type()) and "conv2d" in gv.name_hint
    )
    plan = plan_model(imported.mod, target, name, imported, tmp_path)
    assert plan.notes == [] and _tiles(plan.prepared) == []


def test_a_tuned_model_with_the_layer_moved_agrees_with_pytorch(layer, tmp_path):
    x, expected, imported = layer
    result = tune(imported, "llvm", trials=8, per_iter=8, work_dir=tmp_path, seed=0)
    [note] = [n for n in result.notes if n.startswith(LAYER)]
    moved = _tiles(result.mod) == [2]
    # a Winograd kernel in the result only when the plan chose it and the tuned model was kept
    assert moved == ("now F(2x2)" in note and result.kept == "tuned")
    got = np.asarray(build_module(result)(x))
    assert np.abs(got - expected).max() <= 1e-4 * np.abs(expected).max()


def test_trials_the_plan_left_tune_a_layer_the_way_not_taken_and_the_faster_model_is_kept(
    layer, tmp_path
):
    x, expected, imported = layer
    # as a run before found: F(2x2) faster alone, the whole model level with direct
    level = {"build": 0, "seconds": {"0": 2e-3, "2": 1e-3}, "in_model": {"0": 1e-2, "2": 9.9e-3}}
    (tmp_path / SHARES_FILE).write_text(json.dumps({"kernels": {}, LAYER_WAYS: {LAYER: level}}))
    first = tune(imported, "llvm", trials=16, per_iter=8, work_dir=tmp_path, seed=0)
    assert not any("both tuned" in n for n in first.notes)  # the plan's tasks took every trial
    # the same tune again measures nothing new as planned: its trials go to F(2x2)
    again = tune(imported, "llvm", trials=16, per_iter=8, work_dir=tmp_path, seed=0)
    [note] = [n for n in again.notes if "both tuned" in n]
    assert note.startswith(f"{LAYER}: direct or F(2x2), both tuned: ")
    took = "now the second" in note
    assert _tiles(again.mod) == ([2] if took else []) or again.kept == "default build"
    assert again.trials_new > 0
    winograd_rows = [r for r in again.model_tasks if r.name.startswith("fused_conv2d_winograd")]
    assert bool(winograd_rows) == took
    listed = json.loads((tmp_path / "kernel_work_dirs.json").read_text())
    assert any(name.startswith("fused_conv2d_winograd") for name in listed)
    got = np.asarray(build_module(again)(x))
    assert np.abs(got - expected).max() <= 1e-4 * np.abs(expected).max()
