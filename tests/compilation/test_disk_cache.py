"""Builds survive a kernel restart: kept on disk, bounded, safe with two writers, never loaded
damaged."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from build_support import LISTINGS
from kernel_support import REPO, Kernel

MM_RELU = (LISTINGS / "ch2_mm_relu.py").read_text()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty cache folder for this test, and no build of this process in memory."""
    from mlc_jupyter.compilation import clear_cache

    monkeypatch.setenv("MLC_JUPYTER_CACHE", str(tmp_path))
    clear_cache()
    yield tmp_path / "builds"
    clear_cache()


def entries(builds: Path) -> list[Path]:
    return sorted(p for p in builds.iterdir() if not p.name.startswith("."))


def mm_relu(j: int = 0):
    """The book's mm_relu; ``j`` > 0 gives a distinct module (C gets +j), so a distinct entry."""
    from mlc_jupyter.cells import parse_script

    source = MM_RELU if not j else MM_RELU.replace("T.float32(0))", f"T.float32({j}))")
    return parse_script(source, kind="tir").objects["MyModule"]


@pytest.mark.slow
def test_the_first_build_after_a_kernel_restart_is_a_cache_hit(tmp_path):
    kernel = Kernel(tmp_path)
    cell = "%%tir --quiet\n" + MM_RELU
    try:
        for attempt in ("built in", "cached on disk, built before"):
            kernel.run("%load_ext mlc_jupyter")
            assert kernel.run(cell)[1] is None
            out, error = kernel.run("%mlc_build MyModule")
            assert error is None and f"MyModule_lib: {attempt}" in out
            check = "import numpy as np; a = np.ones((128, 128), 'float32'); "
            out, error = kernel.run(check + "print(float(MyModule_lib.mm_relu(a, a)[5, 7]))")
            assert (error, out.strip()) == (None, "128.0")
            kernel.restart()
    finally:
        kernel.shutdown()


def test_a_damaged_entry_is_rebuilt_not_loaded(cache):
    from mlc_jupyter.compilation import build_module, clear_cache, wait_for_saved_builds

    build_module(mm_relu())
    wait_for_saved_builds()
    (entry,) = entries(cache)
    library = next(entry.glob("*.so"))
    data = bytearray(library.read_bytes())
    data[len(data) // 2 :] = bytes(len(data) - len(data) // 2)  # half the code zeroed
    library.write_bytes(bytes(data))
    clear_cache(disk=False)  # as after a restart
    built = build_module(mm_relu())
    assert not built.cached and not built.from_disk
    wait_for_saved_builds()
    clear_cache(disk=False)
    again = build_module(mm_relu())
    assert again.from_disk  # the entry was written again, whole
    a = np.ones((128, 128), "float32")
    np.testing.assert_allclose(again.mm_relu(a, a), 128.0)


def test_the_cache_folder_stays_under_its_limit_dropping_the_least_recently_used(
    cache, monkeypatch
):
    from mlc_jupyter.compilation import build_module, clear_cache, wait_for_saved_builds

    build_module(mm_relu(1))
    wait_for_saved_builds()
    (first,) = entries(cache)
    size = sum(f.stat().st_size for f in first.rglob("*") if f.is_file())
    monkeypatch.setenv("MLC_JUPYTER_BUILD_CACHE_MB", str(2.5 * size / 2**20))
    for j in (2, 3, 4):
        build_module(mm_relu(j))
        wait_for_saved_builds()
    kept = entries(cache)
    assert len(kept) == 2 and first not in kept
    clear_cache(disk=False)
    assert build_module(mm_relu(4)).from_disk and not build_module(mm_relu(1)).from_disk


def test_two_kernels_writing_the_same_build_at_once_leave_one_whole_entry(tmp_path):
    script = textwrap.dedent(
        f"""
        import sys, time
        import numpy as np
        sys.path.insert(0, {str(REPO / "tests")!r})
        from build_support import LISTINGS
        from mlc_jupyter.cells import parse_script
        from mlc_jupyter.compilation import build_module
        mod = parse_script((LISTINGS / "ch2_mm_relu.py").read_text(), kind="tir").value
        while time.time() < float(sys.argv[1]):
            time.sleep(0.001)
        built = build_module(mod, force=len(sys.argv) > 2)
        a = np.ones((128, 128), "float32")
        print(built.from_disk, float(built.mm_relu(a, a)[3, 4]))
        """
    )
    outputs, third = _two_writers_then_a_reader(script, tmp_path, 8)
    assert outputs == [["False", "128.0"], ["False", "128.0"]]
    builds = tmp_path / "builds"
    assert len(entries(builds)) == 1 and not list(builds.glob(".staging-*"))
    assert third == ["True", "128.0"]


def _two_writers_then_a_reader(script: str, cache: Path, wait_s: float):
    """Run ``script`` in two processes that build at the same moment, ``wait_s`` from now (after
    their imports), both as with ``--force``, so both write the same entry to the ``cache``
    folder; then in a third, which loads it. Their printed words: ``([first, second], third)``."""
    import time

    env = {**os.environ, "MLC_JUPYTER_CACHE": str(cache), "PYTHONPATH": str(REPO)}
    start = str(time.time() + wait_s)
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", script, start, "force"], env=env, stdout=subprocess.PIPE
        )
        for _ in range(2)
    ]
    outputs = [run.communicate(timeout=300)[0].decode().split() for run in runs]
    assert all(run.returncode == 0 for run in runs)
    third = subprocess.run(
        [sys.executable, "-c", script, "0"], env=env, capture_output=True, text=True, timeout=300
    )
    return outputs, third.stdout.split()


def test_two_kernels_writing_the_same_models_build_at_once_leave_one_whole_entry(tmp_path):
    """A model's entry is a library and its VM file (``vm.bin``): two kernels that store the same
    model at once leave one entry with both, and a third kernel loads it and gets PyTorch's
    outputs."""
    script = textwrap.dedent(
        """
        import sys, time
        import numpy as np
        import torch
        from mlc_jupyter.compilation import build_module, wait_for_saved_builds
        from mlc_jupyter.models import import_model
        torch.manual_seed(0)
        model = torch.nn.Sequential(
            torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 8)
        )
        x = torch.randn(2, 256)
        imported = import_model(model, x)
        while time.time() < float(sys.argv[1]):
            time.sleep(0.001)
        built = build_module(imported, force=len(sys.argv) > 2)
        wait_for_saved_builds()
        error = np.abs(built(x.numpy()) - model(x).detach().numpy()).max()
        print(built.from_disk, bool(error < 1e-4))
        """
    )
    outputs, third = _two_writers_then_a_reader(script, tmp_path, 12)  # after importing torch
    assert outputs == [["False", "True"], ["False", "True"]]
    builds = tmp_path / "builds"
    (entry,) = entries(builds)
    assert not list(builds.glob(".staging-*"))
    assert (entry / "vm.bin").is_file() and list(entry.glob("*.so"))
    assert third == ["True", "True"]


def test_an_entry_evicted_by_another_kernel_right_after_it_loads_is_still_a_hit(cache, monkeypatch):
    from mlc_jupyter.compilation import build_module, clear_cache, disk_cache
    from mlc_jupyter.compilation import wait_for_saved_builds as flush

    build_module(mm_relu(), "llvm")
    flush()
    clear_cache(disk=False)
    real_load = disk_cache.load_executable

    def load_then_evicted(*args):  # another kernel empties the folder at that very moment
        loaded = real_load(*args)
        disk_cache.evict(0)
        return loaded

    monkeypatch.setattr(disk_cache, "load_executable", load_then_evicted)
    built = build_module(mm_relu(), "llvm")  # was: FileNotFoundError from os.utime
    assert built.from_disk and entries(cache) == []
    a = np.ones((128, 128), "float32")
    assert float(built["mm_relu"](a, a)[0, 0]) == 128.0


def test_the_memory_cache_drops_the_least_recently_used_builds_past_its_cap(cache, monkeypatch):
    from mlc_jupyter.compilation import build_module
    from mlc_jupyter.compilation.cached_build import _CACHE
    from mlc_jupyter.compilation.memory_cache import CODE_BYTES

    monkeypatch.setenv("MLC_JUPYTER_MEMORY_CACHE_MB", str(2.5 * CODE_BYTES / 2**20))
    first = build_module(mm_relu(1), "llvm", persist=False)
    build_module(mm_relu(2), "llvm", persist=False)
    assert build_module(mm_relu(1), "llvm", persist=False).cached  # used again: the newest
    build_module(mm_relu(3), "llvm", persist=False)  # the cap holds two: mm_relu(2) goes
    assert len(_CACHE) == 2 and _CACHE.bytes <= 2.5 * CODE_BYTES
    assert build_module(mm_relu(1), "llvm", persist=False).cached
    assert not build_module(mm_relu(2), "llvm", persist=False).cached
    a = np.ones((128, 128), "float32")
    assert float(first["mm_relu"](a, a)[0, 0]) == 128.0  # a build the notebook holds still runs


@pytest.mark.slow
def test_a_build_made_by_other_code_of_the_project_is_rebuilt_not_served(tmp_path):
    """The project's code schedules a model's kernels, not the module hashed: after an upgrade or
    an edit of the project a build is made again, and the other tree's entry stays its own."""
    edited = tmp_path / "edited"
    shutil.copytree(
        REPO / "mlc_jupyter",
        edited / "mlc_jupyter",
        ignore=shutil.ignore_patterns("__pycache__", "labextension"),
    )
    schedule = edited / "mlc_jupyter" / "compilation" / "conv_schedule.py"
    schedule.write_text(schedule.read_text() + "\n# an edit of the schedules\n")
    script = (
        f"import sys; sys.path.insert(1, {str(REPO / 'tests')!r})\n"
        "from foreign_support import add_one\n"
        "from mlc_jupyter.compilation import build_module, wait_for_saved_builds\n"
        "print(build_module(add_one(), 'llvm').from_disk); wait_for_saved_builds()"
    )

    def from_disk(tree: Path) -> str:
        env = {**os.environ, "MLC_JUPYTER_CACHE": str(tmp_path / "cache"), "PYTHONPATH": str(tree)}
        done = subprocess.run(
            [sys.executable, "-c", script], env=env, cwd=tmp_path, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout.split()[-1]

    assert [from_disk(REPO), from_disk(edited), from_disk(REPO)] == ["False", "False", "True"]


def test_a_build_loaded_from_the_cache_runs_from_a_private_copy_that_a_clear_cannot_pull(cache):
    """Another kernel loads the build from the disk cache; this one then clears the cache. The
    other kernel's library was never the entry's file (a copy of its own, removed at its exit),
    so it goes on calling the kernel and exits cleanly."""
    from mlc_jupyter.compilation import build_module, disk_cache
    from mlc_jupyter.compilation import wait_for_saved_builds as flush

    build_module(mm_relu(), "llvm")
    flush()
    script = textwrap.dedent(
        f"""
        import re, sys
        import numpy as np
        sys.path.insert(0, {str(REPO / "tests")!r})
        from build_support import LISTINGS
        from mlc_jupyter.cells import parse_script
        from mlc_jupyter.compilation import build_module
        mod = parse_script((LISTINGS / "ch2_mm_relu.py").read_text(), kind="tir").value
        built = build_module(mod, "llvm")
        a = np.ones((128, 128), "float32")
        maps = open("/proc/self/maps").read().split()
        mapped = sorted({{p for p in maps if re.search(r"/lib-[0-9a-f]{{16}}[^/]*[.]so$", p)}})
        print(built.from_disk, *mapped, flush=True)
        sys.stdin.readline()  # the cache is cleared meanwhile
        print(float(built.mm_relu(a, a)[3, 4]), flush=True)
        """
    )
    env = {**os.environ, "MLC_JUPYTER_CACHE": str(cache.parent), "PYTHONPATH": str(REPO)}
    other = subprocess.Popen(
        [sys.executable, "-c", script], env=env, text=True,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
    )  # fmt: skip
    try:
        from_disk, *mapped = other.stdout.readline().split()
        assert from_disk == "True" and len(mapped) == 1, mapped
        (library,) = map(Path, mapped)
        assert cache not in library.parents  # not the entry's own file
        assert disk_cache.clear()[0] == 1 and entries(cache) == []
        out, _ = other.communicate("go\n", timeout=120)
    finally:
        other.kill() if other.poll() is None else None
    assert (other.returncode, out.strip()) == (0, "128.0")
    assert not library.exists()  # the copy left with its process


def test_a_models_entry_keeps_its_weights_beside_its_kernels_and_a_damaged_vm_is_rebuilt(cache):
    """A Relax build's library holds its kernels; its VM (bytecode and weights) is a file of the
    entry, joined to them on a hit: the fresh build, the hit and the rebuild after damage all
    give PyTorch's outputs."""
    import torch

    from mlc_jupyter.compilation import build_module, clear_cache, wait_for_saved_builds
    from mlc_jupyter.models import import_model

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 8))
    x = torch.randn(2, 256)
    expected = model(x).detach().numpy()
    imported = import_model(model, x)
    fresh = build_module(imported)
    np.testing.assert_allclose(fresh(x.numpy()), expected, rtol=1e-5, atol=1e-5)
    wait_for_saved_builds()
    (entry,) = entries(cache)
    vm, library = entry / "vm.bin", next(entry.glob("*.so"))
    weights = 4 * sum(p.numel() for p in model.parameters())
    assert vm.stat().st_size > weights > 2 * library.stat().st_size  # in the VM's file only
    assert (entry / "module.json").stat().st_size < weights / 4  # named there by their digests
    clear_cache(disk=False)  # as after a restart
    hit = build_module(imported)
    assert hit.from_disk
    np.testing.assert_allclose(hit(x.numpy()), expected, rtol=1e-5, atol=1e-5)
    data = bytearray(vm.read_bytes())
    data[-4096:] = bytes(4096)  # the last weights zeroed
    vm.write_bytes(bytes(data))
    clear_cache(disk=False)
    rebuilt = build_module(imported)
    assert not rebuilt.from_disk
    np.testing.assert_allclose(rebuilt(x.numpy()), expected, rtol=1e-5, atol=1e-5)
