"""A whole model's plan: a kernel that takes a scalar keeps its default schedule, named with why,
and the model's other kernels are tuned; the plan file stays whole for a reader while another
process rewrites it, and after that process is killed mid-write."""

from __future__ import annotations

import numpy as np
import pytest

from mlc_jupyter import parse_relax
from mlc_jupyter.errors import TuneError
from mlc_jupyter.tune import tune

#: A matmul, then a kernel scaled by the model's scalar parameter ``s`` (a ``T.float32``).
MATMUL_THEN_SCALE = """
@I.ir_module
class Scaled:
    @T.prim_func
    def mm(A: T.Buffer((32, 32), "float32"), B: T.Buffer((32, 32), "float32"),
           C: T.Buffer((32, 32), "float32")):
        for i, j, k in T.grid(32, 32, 32):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = T.float32(0)
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]

    @T.prim_func
    def scale(A: T.Buffer((32, 32), "float32"), s: T.float32, B: T.Buffer((32, 32), "float32")):
        for i, j in T.grid(32, 32):
            with T.block("B"):
                vi, vj = T.axis.remap("SS", [i, j])
                B[vi, vj] = A[vi, vj] * s

    @R.function
    def main(x: R.Tensor((32, 32), "float32"), w: R.Tensor((32, 32), "float32"),
             s: R.Prim("float32")):
        cls = Scaled
        with R.dataflow():
            y = R.call_tir(cls.mm, (x, w), out_sinfo=R.Tensor((32, 32), "float32"))
            z = R.call_tir(cls.scale, (y, s), out_sinfo=R.Tensor((32, 32), "float32"))
            R.output(z)
        return z
"""

SCALE_NOTE = (
    "scale takes a scalar parameter (s: float32) and keeps its default schedule (MetaSchedule "
    "measures candidates on buffers only; tune it alone with bind)"
)


def test_a_kernel_with_a_scalar_keeps_its_default_and_the_others_are_tuned(tmp_path):
    from mlc_jupyter.compilation import build_module

    result = tune(parse_relax(MATMUL_THEN_SCALE), "llvm", trials=16, per_iter=8,
                  work_dir=tmp_path, seed=0)  # fmt: skip
    assert result.notes == (SCALE_NOTE,)
    assert [t.name for t in result.model_tasks] == ["mm"] and result.model_tasks[0].trials > 0
    rng = np.random.default_rng(0)
    x, w = (rng.standard_normal((32, 32)).astype("float32") for _ in range(2))
    out = build_module(result.mod, "llvm")(x, w, 0.5)
    np.testing.assert_allclose(out, 0.5 * (x @ w), rtol=1e-4, atol=1e-4)


def test_tuning_only_the_kernel_with_a_scalar_says_why_it_cannot(tmp_path):
    with pytest.raises(TuneError) as caught:
        tune(parse_relax(MATMUL_THEN_SCALE), "llvm", trials=8, func="scale", work_dir=tmp_path)
    assert str(caught.value) == f"nothing in this model can be tuned: {SCALE_NOTE}"


#: A process that rewrites a large plan file as fast as it can, until it is killed.
REWRITER = """
import sys
from pathlib import Path
from mlc_jupyter.tune.model_plan import save_final_s
work, step = Path(sys.argv[1]), 0
print("writing", flush=True)
while True:
    step += 1
    save_final_s(work, float(step))
"""


def test_the_plan_file_is_whole_for_a_reader_and_after_its_writer_is_killed(tmp_path):
    import json
    import os
    import signal
    import subprocess
    import sys
    import time

    from mlc_jupyter.tune.model_plan import SHARES_FILE

    kernels = {f"fused_conv2d{i}_add_relu": [1, 1e-4, 1e-3] for i in range(5000)}
    path = tmp_path / SHARES_FILE
    path.write_text(json.dumps({"kernels": kernels, "final_s": 0.0}))
    writer = subprocess.Popen(
        [sys.executable, "-c", REWRITER, str(tmp_path)],
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    try:
        assert writer.stdout.readline().strip() == b"writing"
        end, reads = time.monotonic() + 1.5, 0
        while time.monotonic() < end:  # a reader while it writes: the old file or the new
            assert len(json.loads(path.read_text())["kernels"]) == len(kernels)
            reads += 1
        writer.send_signal(signal.SIGKILL)  # kill -9, most likely mid-write
        writer.wait(timeout=30)
    finally:
        writer.kill()
    saved = json.loads(path.read_text())
    assert reads > 10 and len(saved["kernels"]) == len(kernels) and saved["final_s"] >= 0
