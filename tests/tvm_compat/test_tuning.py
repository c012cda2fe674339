"""Contract of tvm_compat/tuning.py: where MetaSchedule lives and the parts tune/ uses, its
logger's name, seeds, and the notebook switch it asks. A failure names what TVM changed."""

from __future__ import annotations

import logging

from mlc_jupyter import tvm_compat


def test_metaschedule_has_what_the_tuner_uses(tmp_path):
    ms = tvm_compat.metaschedule()
    for name in ("TuneContext", "tune.tune_tasks", "cost_model.XGBModel", "database.JSONDatabase",
                 "database.TuningRecord", "arg_info.ArgInfo", "builder.PyBuilder",
                 "runner.PyRunner", "measure_callback.UpdateCostModel"):  # fmt: skip
        obj = ms
        for part in name.split("."):
            assert hasattr(obj, part), f"MetaSchedule has no {name} any more"
            obj = getattr(obj, part)
    assert ms.__name__ == tvm_compat.METASCHEDULE_LOGGER, (
        f"MetaSchedule logs under {ms.__name__}, not {tvm_compat.METASCHEDULE_LOGGER}"
    )
    seeds = tvm_compat.fork_seed(0, 3)
    assert len(seeds) == 3 and seeds == tvm_compat.fork_seed(0, 3), "fork_seed is not repeatable"
    loggers = tvm_compat.metaschedule_task_loggers(str(tmp_path), ["a"])
    assert isinstance(loggers[0], logging.Logger)


def test_the_notebook_switch_is_a_global_metaschedule_asks():
    from tvm_ffi import get_global_func

    name = "s_tir.meta_schedule.using_ipython"
    tvm_compat.metaschedule()
    assert get_global_func(name, allow_missing=True) is not None, (
        f"MetaSchedule no longer asks {name}: metaschedule_outside_notebook() changes nothing"
    )
    with tvm_compat.metaschedule_outside_notebook():
        assert get_global_func(name)() is False
    tvm_compat.import_tensor_intrinsics(("x86",))


def test_task_loggers_survive_a_handler_metaschedule_did_not_make(tmp_path):
    stray = logging.StreamHandler()  # unnamed: MetaSchedule's dictConfig re-lists handlers by name
    logging.getLogger(tvm_compat.METASCHEDULE_LOGGER).addHandler(stray)
    loggers = tvm_compat.metaschedule_task_loggers(str(tmp_path), ["b"])
    assert isinstance(loggers[0], logging.Logger)
    assert stray not in logging.getLogger(tvm_compat.METASCHEDULE_LOGGER).handlers
