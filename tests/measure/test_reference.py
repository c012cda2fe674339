"""The reference a kernel's outputs are checked against, where it is a TVM module."""

from __future__ import annotations

import numpy as np
from build_support import blocking, gpu_matmul, mm_relu

from mlc_jupyter.compilation import resolve_target
from mlc_jupyter.compilation.signatures import signatures
from mlc_jupyter.measure.inputs import random_inputs
from mlc_jupyter.measure.reference import _built_for, reference_outputs


def test_the_unscheduled_kernel_is_the_reference_of_a_cuda_kernel_and_runs_on_this_cpu():
    """A CUDA tuning's or trace's kernel is checked against the TIR it started from, whose loops
    are bound to no GPU thread: a CUDA build of it is refused, so it runs here."""
    ref = mm_relu()
    sig = signatures(ref)["mm_relu"]
    inputs = random_inputs(sig, seed=0)
    (out,) = reference_outputs(ref, inputs, sig, resolve_target("cuda"), None)
    np.testing.assert_allclose(out, np.maximum(inputs[0] @ inputs[1], 0), rtol=1e-5)


def test_a_reference_bound_to_gpu_threads_is_built_for_the_gpu():
    cuda = resolve_target("cuda")
    assert _built_for(gpu_matmul(blocking, 8, 8, 8, 8, 4), cuda) is cuda
    assert _built_for(mm_relu(), cuda) is None
    cpu = resolve_target("llvm")
    assert _built_for(mm_relu(), cpu) is cpu
