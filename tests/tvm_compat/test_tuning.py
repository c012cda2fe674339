"""Contract of tvm_compat/tuning.py: where MetaSchedule lives and the parts tune/ uses, its
logger's name, seeds, and the notebook switch it asks. A failure names what TVM changed."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mlc_jupyter import tvm_compat

ROOT = Path(__file__).resolve().parents[2]


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


@pytest.mark.slow
def test_raw_metaschedule_finds_every_backends_intrinsics_after_ours_registered_one():
    """Our builds register one backend's tensor intrinsics and make ``TuneContext`` objects
    without importing the others' (seconds each); a user's own MetaSchedule tuning for CUDA
    afterwards, in the same kernel, still finds the CUDA ones TVM's import registers."""
    script = """
import sys
from mlc_jupyter import tvm_compat
from build_support import mm_relu
tvm_compat.import_tensor_intrinsics(("x86",))
ms = tvm_compat.metaschedule()
tvm_compat.tune_context(mod=mm_relu(), target=tvm_compat.tvm().target.Target({"kind": "llvm", "num-cores": 2}),
                        space_generator="post-order-apply", task_name="t")
assert "tvm.s_tir.tensor_intrin.cuda" not in sys.modules  # ours imported only what it needed
cuda = tvm_compat.tvm().target.Target({"kind": "cuda", "arch": "sm_80", "max_threads_per_block":
    1024, "max_shared_memory_per_block": 49152, "thread_warp_size": 32})
ms.TuneContext(mod=mm_relu(), target=cuda, space_generator="post-order-apply", task_name="u")
print("raw cuda context made")
"""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300
    )
    assert "raw cuda context made" in done.stdout, done.stderr[-2000:]
