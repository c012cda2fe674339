"""How much the schedule stepper costs over running the same schedule code directly.

Prints seconds for the book's bmm_relu exercise (13 statements): plain exec on a Schedule, the
recorded run (`run_schedule_cell`: trace + module text + diff per step) and the widget state
(highlighted IR, diffs and loop tree for every step).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def main() -> None:
    from test_schedule import BMM_RELU, BMM_STEPS

    from mlc_jupyter import tvm_compat
    from mlc_jupyter.cells import parse_script
    from mlc_jupyter.dialect import translate
    from mlc_jupyter.schedule import ScheduleSession, run_schedule_cell
    from mlc_jupyter.widgets.schedule_stepper import ScheduleStepper

    mod = parse_script(BMM_RELU, {}, kind="tir").objects["MyBmmRelu"]
    code = translate(BMM_STEPS).source

    def plain() -> None:
        ns = {"sch": tvm_compat.Schedule(mod)}
        ns["sch"].work_on("bmm_relu")
        exec(code, ns)  # noqa: S102

    for label, fn in [
        ("plain exec", plain),
        ("run_schedule_cell", lambda: run_schedule_cell(BMM_STEPS, mod)),
        ("stepper widget state", lambda: ScheduleStepper(ScheduleSession(mod, BMM_STEPS))),
    ]:
        fn()
        start = time.perf_counter()
        for _ in range(3):
            fn()
        print(f"{label:<22} {(time.perf_counter() - start) / 3 * 1e3:8.1f} ms")


if __name__ == "__main__":
    main()
