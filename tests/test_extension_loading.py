"""Loading the extension is cheap: it must not import TVM (about 3 s) until a magic needs it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest


def test_load_ext_imports_no_tvm_module():
    script = textwrap.dedent(
        """
        import sys
        from IPython.testing.globalipapp import start_ipython
        ip = start_ipython()
        ip.run_line_magic("load_ext", "mlc_jupyter")
        loaded = sorted(m for m in sys.modules if m == "tvm" or m.startswith(("tvm.", "tvm_ffi")))
        print("LOADED", loaded)
        print("MAGICS", sorted(ip.magics_manager.magics["cell"]))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    assert "LOADED []" in out
    assert "'tir'" in out and "'relax'" in out


def test_every_registered_magic_module_loads_without_tvm():
    script = textwrap.dedent(
        """
        import importlib, sys
        from mlc_jupyter.magics import MAGIC_MODULES
        for name in MAGIC_MODULES:
            importlib.import_module("mlc_jupyter.magics." + name)
        print("LOADED", sorted(m for m in sys.modules if m == "tvm" or m.startswith("tvm.")))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    assert "LOADED []" in out


def _kernel_threads(**given: str) -> list[str]:
    """``TVM_NUM_THREADS``, the main thread's TVM pool size and how many of the process's threads
    are pinned to fewer cores than it has, after ``%load_ext`` and a parallel kernel; ``given``:
    the variables the user set (the others unset)."""

    script = textwrap.dedent(
        """
        import os, numpy as np
        from IPython.testing.globalipapp import start_ipython
        ip = start_ipython()
        ip.run_line_magic("load_ext", "mlc_jupyter")
        import tvm
        from tvm import te
        a = te.placeholder((4096,), name="A")
        b = te.compute((4096,), lambda i: a[i] + 1.0, name="B")
        sch = tvm.s_tir.Schedule(te.create_prim_func([a, b]))
        sch.parallel(sch.get_loops(sch.get_sblock("B"))[0])
        f = tvm.compile(sch.mod, target="llvm")
        f(tvm.runtime.tensor(np.ones(4096, "float32")), tvm.runtime.empty((4096,), "float32"))
        cores = os.sched_getaffinity(0)
        tasks = os.listdir(f"/proc/{os.getpid()}/task")
        pinned = sum(1 for t in tasks if os.sched_getaffinity(int(t)) != cores)
        print("THREADS", os.environ["TVM_NUM_THREADS"], tvm.runtime.num_threads(), pinned)
        """
    )
    env = {k: v for k, v in os.environ.items() if k not in ("TVM_NUM_THREADS", "TVM_BIND_THREADS")}
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True,
        env={**env, **given},
    ).stdout  # fmt: skip
    return out.split("THREADS", 1)[1].split()


def test_tvm_kernels_in_the_notebook_use_every_core_unless_the_user_says_otherwise():

    cores = str(os.cpu_count())
    # TVM alone would take half the logical CPUs: one thread on a 2-core machine
    assert _kernel_threads()[:2] == [cores, cores]
    assert _kernel_threads(TVM_NUM_THREADS="1")[:2] == ["1", "1"]


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores")
def test_tvm_workers_float_between_cores_unless_the_user_pins_them():
    # a worker pinned to a core another process keeps busy makes every parallel kernel wait
    assert _kernel_threads()[2] == "0"
    # TVM_BIND_THREADS=1 (TVM's own default) is the user's to choose: the workers are pinned
    assert int(_kernel_threads(TVM_BIND_THREADS="1")[2]) >= 1
