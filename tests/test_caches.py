"""%mlc_cache: each part of the cache seen and cleared, without losing another notebook's work
(real builds, a real tune, other processes holding a build and a work dir)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from build_support import LISTINGS, matmul
from kernel_support import REPO

MM_RELU = (LISTINGS / "ch2_mm_relu.py").read_text()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty cache folder for this test, and no build of this process in memory."""
    from mlc_jupyter.compilation import clear_cache

    monkeypatch.setenv("MLC_JUPYTER_CACHE", str(tmp_path))
    clear_cache(disk=False)
    yield tmp_path
    clear_cache(disk=False)


def parts(info) -> dict:
    return {p.name: p for p in info.parts}


def test_mlc_cache_shows_each_part_and_clears_builds_and_memory(shell, cache, capsys):
    shell.run_cell("%%tir --quiet\n" + MM_RELU)
    assert shell.run_cell("%mlc_build MyModule").error_in_exec is None
    info = shell.run_line_magic("mlc_cache", "-o")
    assert info.root == str(cache) and info.configured_by == "MLC_JUPYTER_CACHE"
    seen = parts(info)
    assert (seen["builds"].count, seen["memory"].count) == (1, 1)
    assert seen["builds"].size_bytes > 0 and seen["builds"].path == str(cache / "builds")

    shell.run_line_magic("mlc_cache", "")  # shown as a table, where it lives and how to clear
    shown = capsys.readouterr().out
    assert f"cache: {cache}" in shown and "MLC_JUPYTER_CACHE" in shown
    assert "1 builds" in shown and "--clear" in shown

    cleared = shell.run_line_magic("mlc_cache", "--clear all -o")
    assert cleared.removed["builds"] == 1 and cleared.removed["memory"] == 1
    seen = parts(shell.run_line_magic("mlc_cache", "-o"))
    assert (seen["builds"].count, seen["memory"].count) == (0, 0)
    a = np.ones((128, 128), "float32")  # the build the notebook names still runs
    assert float(shell.user_ns["MyModule_lib"].mm_relu(a, a)[5, 7]) == 128.0


def test_an_unknown_part_is_refused_by_name(shell, cache):
    from mlc_jupyter import clear_caches

    with pytest.raises(ValueError, match=r"no cache part 'tuning'.*tune"):
        clear_caches("tuning")
    result = shell.run_cell("%mlc_cache --clear tuning")
    assert result.error_in_exec is not None or result.error_before_exec is not None


def test_logs_of_running_kernels_are_kept(cache):
    from mlc_jupyter import cache_info, clear_caches
    from mlc_jupyter.caches import native_log_file

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    native_log_file(cache, int(gone.stdout)).write_text("what a crashed kernel printed\n")
    native_log_file(cache, os.getpid()).write_text("this kernel's\n")
    assert parts(cache_info())["logs"].count == 2
    cleared = clear_caches("logs")
    assert cleared.removed["logs"] == 1
    assert any(f"running kernel {os.getpid()}" in why for why in cleared.kept)
    assert native_log_file(cache, os.getpid()).exists()


@pytest.mark.slow
def test_clearing_builds_does_not_break_a_kernel_that_loaded_one(cache):
    """Another process loads the build from disk, the builds are cleared under it, and it still
    calls the build and exits cleanly (no crash at exit either)."""
    from mlc_jupyter.caches import clear_caches
    from mlc_jupyter.compilation import build_module, disk_cache

    mod = matmul(64)
    build_module(mod, "llvm")
    disk_cache.flush()
    other = textwrap.dedent(
        """
        import sys, numpy as np
        sys.path.insert(0, "tests")
        from build_support import matmul
        from mlc_jupyter.compilation import build_module
        built = build_module(matmul(64), "llvm")
        print("loaded", built.from_disk, flush=True)
        sys.stdin.readline()  # the builds are cleared meanwhile
        a = np.ones((64, 64), "float32")
        print("called", float(built.main(a, a)[3, 4]), flush=True)
        """
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-c", other], cwd=REPO, env=env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)  # fmt: skip
    assert proc.stdout.readline().strip() == "loaded True"
    assert clear_caches("builds").removed["builds"] == 1
    out, _ = proc.communicate("go\n", timeout=60)
    assert (proc.returncode, out.strip()) == (0, "called 64.0")


HOLD = """
import sys
from pathlib import Path
from mlc_jupyter.tune.work_lock import hold_work_dir
with hold_work_dir(Path(sys.argv[1]), wait=False):  # as a tuning run in another kernel
    print("held", flush=True)
    sys.stdin.readline()
"""


@pytest.mark.slow
def test_tuning_records_go_only_by_name_and_a_dir_in_use_is_kept(cache):
    from mlc_jupyter import cache_info, clear_caches
    from mlc_jupyter.tune import tune
    from mlc_jupyter.tune.work_lock import hold_work_dir

    tune(matmul(32), trials=8, per_iter=8, seed=0)
    (tuned,) = (cache / "tune").iterdir()
    shutil.copytree(tuned, cache / "tune" / "tir-copy")  # a second work dir, as another kernel's
    seen = parts(cache_info())["tune"]
    dirs = sorted((cache / "tune").iterdir())
    assert seen.count == len(dirs) == 2 and "16 tuning records" in seen.note

    assert "tune" not in clear_caches("all").removed  # all: never the user's tuning
    assert parts(cache_info())["tune"].count == 2

    busy = subprocess.Popen([sys.executable, "-c", HOLD, str(dirs[0])], text=True, cwd=REPO,
                            env={**os.environ, "PYTHONPATH": str(REPO)},
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)  # fmt: skip
    try:
        assert busy.stdout.readline().strip() == "held"
        with hold_work_dir(dirs[1]):  # a run of this kernel (a tune in a thread)
            kept = clear_caches("tune")
        assert (kept.removed["tune"], kept.records_removed) == (0, 0)
        assert (
            kept.kept[1]
            == f"{dirs[1]}: in use by the tuning run of pid {os.getpid()} (this kernel)"
        )
        cleared = clear_caches("tune")
        assert cleared.removed["tune"] == 1 and cleared.records_removed == 8
        assert len(cleared.kept) == 1 and re.fullmatch(
            rf"{re.escape(str(dirs[0]))}: in use by the tuning run of pid {busy.pid}, "
            r"started \d\d:\d\d",
            cleared.kept[0],
        )
        assert len(list(dirs[0].glob("database_*.json"))) == 2  # the run's records are there
        assert [p.name for p in dirs[1].iterdir()] == [".lock"]  # a waiting run finds its lock
    finally:
        busy.communicate("done\n", timeout=10)
