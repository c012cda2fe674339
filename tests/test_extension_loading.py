"""Loading the extension is cheap: it must not import TVM (about 3 s) until a magic needs it."""

from __future__ import annotations

import subprocess
import sys
import textwrap


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


def _kernel_threads(env_threads: str | None) -> str:
    """``TVM_NUM_THREADS`` and the main thread's TVM pool size after ``%load_ext`` + a build."""
    import os

    script = textwrap.dedent(
        """
        import os, numpy as np
        from IPython.testing.globalipapp import start_ipython
        ip = start_ipython()
        ip.run_line_magic("load_ext", "mlc_jupyter")
        import tvm
        from tvm import te
        a = te.placeholder((64,), name="A")
        b = te.compute((64,), lambda i: a[i] + 1.0, name="B")
        f = tvm.compile(te.create_prim_func([a, b]), target="llvm")
        f(tvm.runtime.tensor(np.ones(64, "float32")), tvm.runtime.empty((64,), "float32"))
        print("THREADS", os.environ["TVM_NUM_THREADS"], tvm.runtime.num_threads())
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "TVM_NUM_THREADS"}
    if env_threads is not None:
        env["TVM_NUM_THREADS"] = env_threads
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env
    ).stdout
    return out.split("THREADS", 1)[1].split()


def test_tvm_kernels_in_the_notebook_use_every_core_unless_the_user_says_otherwise():
    import os

    cores = str(os.cpu_count())
    # TVM alone would take half the logical CPUs: one thread on a 2-core machine
    assert _kernel_threads(None) == [cores, cores]
    assert _kernel_threads("1") == ["1", "1"]
