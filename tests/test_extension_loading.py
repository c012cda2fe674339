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
