"""Traces from a file or a work dir are code: ``%mlc_trace`` refuses one that would link native
code into a build, and nothing of it runs, in this process or the next one on the same cache."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from foreign_support import ADD_ONE, add_one, poisoned_trace_json, poisoned_work_dir

from mlc_jupyter.compilation import wait_for_saved_builds
from mlc_jupyter.errors import ForeignCodeError

#: The next session: the same cache, the notebook's kernel built and called (a disk-cache hit
#: when the first session built it), then whether the payload's marker exists.
NEXT_SESSION = textwrap.dedent(
    """
    import sys
    import numpy as np
    from mlc_jupyter import parse_tir
    from mlc_jupyter.compilation import build_module, wait_for_saved_builds
    built = build_module(parse_tir(sys.argv[1]), "llvm")
    wait_for_saved_builds()
    out = np.zeros(16, "float32")
    built["add_one"](np.arange(16, dtype="float32"), out)
    print(built.from_disk, out[3])
    """
)


def _next_session(cache, marker):
    env = {**os.environ, "MLC_JUPYTER_CACHE": str(cache), "PYTHONPATH": os.getcwd()}
    done = subprocess.run(
        [sys.executable, "-c", NEXT_SESSION, ADD_ONE], env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.split()


def test_a_shared_trace_with_pragma_import_llvm_is_refused_and_nothing_of_it_runs_later(
    shell, tmp_path, monkeypatch
):
    cache, marker = tmp_path / "cache", tmp_path / "payload-ran"
    monkeypatch.setenv("MLC_JUPYTER_CACHE", str(cache))
    shell.run_cell(f"%%tir\n{ADD_ONE}")
    shell.user_ns["shared"] = poisoned_trace_json(add_one(), marker)
    with pytest.raises(ForeignCodeError) as err:
        shell.run_line_magic("mlc_trace", "shared --mod add_one")
    assert str(err.value).startswith(
        'step 3 of the JSON trace: sch.annotate(..., ann_key="pragma_import_llvm"'
    )
    assert "shared_replayed" not in shell.user_ns
    shell.run_line_magic("mlc_build", "add_one --force")
    wait_for_saved_builds()
    assert _next_session(cache, marker) == ["True", "4.0"]  # the next session's disk-cache hit
    assert not marker.exists(), "the shared trace's payload ran"


def test_a_shared_work_dir_is_refused_by_its_best_records_step(tmp_path):
    from mlc_jupyter.trace import load_trace

    marker = tmp_path / "payload-ran"
    work = poisoned_work_dir(tmp_path / "work", add_one(), marker)
    for mod in (None, add_one()):
        with pytest.raises(ForeignCodeError, match=rf"^step 3 of the record on line 1 of {work}/"):
            load_trace(str(work), mod)
    assert not marker.exists()


@pytest.mark.slow
def test_the_payload_is_real_when_the_user_applies_it_in_the_notebook(tmp_path, monkeypatch):
    """The control: the same step typed in the notebook is the user's own code and is built;
    the command runs when the build loads, here and in the next session's disk-cache hit (so
    the refusal matters)."""
    from foreign_support import poisoned_schedule

    from mlc_jupyter.compilation import build_module, wait_for_saved_builds

    cache, marker = tmp_path / "cache", tmp_path / "payload-ran"
    monkeypatch.setenv("MLC_JUPYTER_CACHE", str(cache))
    build_module(poisoned_schedule(add_one(), marker).mod, "llvm")
    wait_for_saved_builds()
    assert marker.exists()  # a build runs from its library, so its own session runs it first
    marker.unlink()
    env = {**os.environ, "MLC_JUPYTER_CACHE": str(cache), "PYTHONPATH": os.getcwd()}
    script = (
        "import sys; sys.path.insert(0, 'tests'); from pathlib import Path\n"
        "from foreign_support import add_one, poisoned_schedule\n"
        "from mlc_jupyter.compilation import build_module\n"
        f"print(build_module(poisoned_schedule(add_one(), Path({str(marker)!r})).mod).from_disk)"
    )
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert done.stdout.split() == ["True"], done.stderr[-2000:]
    assert marker.exists()
