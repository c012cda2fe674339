"""One fuzz worker: a real IPython shell with the extension loaded runs mutated book cells.

``python fuzz_worker.py SEEDS.json RESULTS.jsonl``: for each seed, the mutated cell runs as the
user would run it (``%%tir`` / ``%%relax`` / ``%%mlc_schedule``), then each module it bound is
built (``%mlc_build``) and each function called on random inputs. One JSON line is appended to
RESULTS before a mutation starts (``started``) and one when it ends, so a parent that sees this
process die knows which mutation killed it.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fuzz_mutations import all_cases, mutation

#: A message located at a cell line: ``line 12, column 5``, ``In [3] line 26``, ``cell In[5], line 11``.
_LOCATED = re.compile(r"\bline (\d+)")
#: A build or run error that names the cell line of a statement: ``In [3] line 26``.
_CELL_LINE = re.compile(r"In ?\[\d+\],? line \d+")
#: What IPython prints for an exception that has no short rendering of its own.
_RAW = ("Traceback (most recent call last)", "-" * 40)
#: Size given to each symbolic dimension when making inputs.
SYMBOLIC_SIZE = 4
#: Functions estimated to need more floating-point operations are built but not called.
MAX_FLOP = 2**28


def _env_functions() -> None:
    """The book's §3.6.1 ``env.linear`` / ``env.relu`` (on NumPy), which some listings call."""
    import numpy as np
    import tvm

    def linear(x: Any, w: Any, b: Any, out: Any) -> None:
        out.copyfrom(x.numpy() @ w.numpy().T + b.numpy())

    def relu(x: Any, out: Any) -> None:
        out.copyfrom(np.maximum(x.numpy(), 0))

    tvm.register_global_func("env.linear", linear, override=True)
    tvm.register_global_func("env.relu", relu, override=True)


def call_every_function(built: Any) -> int:
    """Call each function of ``built`` on random data; the number of calls made (a function
    of more than :data:`MAX_FLOP` is not called: a naive 1024^3 matmul would take seconds)."""
    import numpy as np

    from mlc_jupyter.measure import estimate_flops

    rng = np.random.default_rng(0)
    calls = 0
    for name, sig in built.signatures.items():
        if not sig.relax and (estimate_flops(built.mod, name) or 0) > MAX_FLOP:
            continue
        params = sig.inputs if sig.relax else sig.params
        args = []
        for param in params:
            shape = tuple(SYMBOLIC_SIZE if d is None else d for d in (param.shape or ()))
            dtype = param.dtype or "float32"
            if np.dtype(dtype).kind == "f":
                args.append(rng.random(shape).astype(dtype))
            else:
                args.append(rng.integers(0, 2, shape).astype(dtype))
        built[name](*args)
        calls += 1
    return calls


def located(text: str, stage: str) -> bool:
    """Whether an error names the line of the user's cell it comes from.

    A cell's own error must name a line of the cell body (line 2 or later: line 1 is the magic
    line); a build or run error, the cell line of the statement it is about (``In [3] line 26``).
    """
    if stage == "cell":
        return any(int(n) >= 2 for n in _LOCATED.findall(text))
    return bool(_CELL_LINE.search(text))


def _run(shell: Any, code: str) -> tuple[bool, str, str]:
    """Run one cell; ``(ok, what it printed, error type)``."""
    from IPython.utils.capture import capture_output

    with capture_output() as out:
        result = shell.run_cell(code, store_history=True)
    error = result.error_in_exec or result.error_before_exec
    text = out.stdout + out.stderr
    return error is None, text, type(error).__name__ if error is not None else ""


def _modules(shell: Any, before: set[str]) -> list[str]:
    """Names the cell bound that hold something buildable."""
    from mlc_jupyter.tvm_compat import ir_module_type, prim_func_type

    kinds = (ir_module_type(), prim_func_type())
    ns = shell.user_ns
    return [n for n in ns if n not in before and not n.startswith("_") and isinstance(ns[n], kinds)]


def run_one(shell: Any, seed: int, cases: dict[str, Any]) -> dict[str, Any]:
    """The outcome of one mutation: the stage it stopped at and what the user saw there."""
    found = mutation(seed, list(cases.values()))
    case = cases[found.case]
    shell.reset(new_session=False)
    shell.user_ns["call_every_function"] = call_every_function
    out: dict[str, Any] = {"seed": seed, "case": found.case, "kind": found.kind,
                           "edit": found.edit, "line": found.line}  # fmt: skip
    if case.kind == "schedule":
        base = cases[case.base]
        ok, text, _ = _run(shell, f"%%{base.kind} --quiet\n{base.source}")
        assert ok, f"the book's {case.base} does not parse: {text}"
        before = set(shell.user_ns)
        cell = f"%%mlc_schedule {case.module} --static\n{found.source}"
    else:
        before = set(shell.user_ns)
        cell = f"%%{case.kind} --quiet\n{found.source}"
    steps = [("cell", cell)]
    ok, text, error = _run(shell, cell)
    if ok:
        names = [f"{case.module}_sch"] if case.kind == "schedule" else _modules(shell, before)
        for name in names:
            steps = [("build", f"%mlc_build {name} --as _fuzz_lib")]
            ok, text, error = _run(shell, steps[0][1])
            if not ok:
                break
            ok, text, error = _run(shell, "print('calls:', call_every_function(_fuzz_lib))")
            steps = [("run", "")]
            if not ok:
                break
            out["calls"] = out.get("calls", 0) + int(text.split("calls:")[-1].split()[0])
    stage = steps[0][0]
    out["stage"] = ("ran" if out.get("calls") else "built") if ok else stage
    if not ok:
        lines = text.rstrip("\n").splitlines()
        raw = any(marker in text for marker in _RAW)
        out.update(
            error=error,
            lines=len(lines),
            located=located(text, stage) and not raw,
            raw=raw,
            text="\n".join(lines[:40]),
        )
    return out


def main(seeds_path: str, results_path: str) -> None:
    from IPython.testing.globalipapp import start_ipython

    seeds = json.loads(Path(seeds_path).read_text())
    shell = start_ipython()
    shell.run_line_magic("load_ext", "mlc_jupyter")
    _env_functions()
    cases = {c.name: c for c in all_cases()}
    with open(results_path, "a") as results:
        for seed in seeds:
            results.write(json.dumps({"started": seed}) + "\n")
            results.flush()
            start = time.perf_counter()
            outcome = run_one(shell, seed, cases)
            outcome["seconds"] = round(time.perf_counter() - start, 3)
            results.write(json.dumps(outcome) + "\n")
            results.flush()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
