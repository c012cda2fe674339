"""On a CUDA GPU: a legacy TE schedule bound to GPU threads (course mode) runs and computes.

The classic TE GPU tutorials, typed as written in a plain cell (but for ``A.dtype`` given to
NumPy: TVM 0.27's is a ``PrimType``, which NumPy 2.5 no longer converts): a vector add split and bound to
``blockIdx.x`` / ``threadIdx.x``, and a matmul tiled with shared-memory copies (``cache_read``)
computed at the block's reduction loop. Marked ``gpu`` and skipped without a local CUDA GPU (the
TensorIR each becomes is checked everywhere: ``tests/course/test_te_schedule.py``).
"""

from __future__ import annotations

import numpy as np
import pytest
from IPython.utils.capture import capture_output

from mlc_jupyter.compilation import gpu_present

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not gpu_present("cuda"), reason="needs a local CUDA GPU"),
]

VECTOR_ADD = """import numpy as np
import tvm
from tvm import te

n = 1 << 20
A = te.placeholder((n,), name="A")
B = te.placeholder((n,), name="B")
C = te.compute((n,), lambda i: A[i] + B[i], name="C")
s = te.create_schedule(C.op)
bx, tx = s[C].split(C.op.axis[0], factor=64)
s[C].bind(bx, te.thread_axis("blockIdx.x"))
s[C].bind(tx, te.thread_axis("threadIdx.x"))
fadd = tvm.build(s, [A, B, C], target="cuda", name="myadd")
dev = tvm.cuda(0)
a = tvm.nd.array(np.random.uniform(size=n).astype("float32"), dev)
b = tvm.nd.array(np.random.uniform(size=n).astype("float32"), dev)
c = tvm.nd.array(np.zeros(n, dtype="float32"), dev)
fadd(a, b, c)
"""

SHARED_MATMUL = """import numpy as np
import tvm
from tvm import te

n = 512
A = te.placeholder((n, n), name="A")
B = te.placeholder((n, n), name="B")
k = te.reduce_axis((0, n), name="k")
C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
s = te.create_schedule(C.op)
AA = s.cache_read(A, "shared", [C])
BB = s.cache_read(B, "shared", [C])
i, j = C.op.axis
by, ty = s[C].split(i, factor=16)
bx, tx = s[C].split(j, factor=16)
ko, ki = s[C].split(k, factor=16)
s[C].reorder(by, bx, ty, tx, ko, ki)
s[C].bind(by, te.thread_axis("blockIdx.y"))
s[C].bind(bx, te.thread_axis("blockIdx.x"))
s[C].bind(ty, te.thread_axis("threadIdx.y"))
s[C].bind(tx, te.thread_axis("threadIdx.x"))
s[AA].compute_at(s[C], ko)
s[BB].compute_at(s[C], ko)
for cache in (AA, BB):
    y, x = cache.op.axis
    s[cache].bind(y, te.thread_axis("threadIdx.y"))
    s[cache].bind(x, te.thread_axis("threadIdx.x"))
mm = tvm.build(s, [A, B, C], target="cuda")
dev = tvm.cuda(0)
a_np = np.random.uniform(size=(n, n)).astype("float32")
b_np = np.random.uniform(size=(n, n)).astype("float32")
c = tvm.nd.array(np.zeros((n, n), dtype="float32"), dev)
mm["__tvm_main__"](tvm.nd.array(a_np, dev), tvm.nd.array(b_np, dev), c)
timing = mm.time_evaluator("__tvm_main__", dev, number=5)(
    tvm.nd.array(a_np, dev), tvm.nd.array(b_np, dev), c
)
"""


def _run(shell, text):
    with capture_output() as captured:
        result = shell.run_cell(text, store_history=True)
    assert result.success, (result.error_in_exec, captured.stdout)
    return shell.user_ns


def test_a_te_vector_add_bound_to_gpu_threads_runs_on_the_gpu(shell):
    ns = _run(shell, VECTOR_ADD)
    np.testing.assert_allclose(ns["c"].numpy(), ns["a"].numpy() + ns["b"].numpy())


def test_a_te_matmul_with_shared_memory_copies_runs_on_the_gpu(shell):
    ns = _run(shell, SHARED_MATMUL)
    np.testing.assert_allclose(ns["c"].numpy(), ns["a_np"] @ ns["b_np"], rtol=1e-4)
    assert ns["timing"].mean > 0
    assert "__shared__" in ns["mm"].imported_modules[0].get_source()
