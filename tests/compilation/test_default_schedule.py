"""Default schedules: the kernels of a Relax model's operators are scheduled, hand-written ones not."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from build_support import listing, prim_funcs

from mlc_jupyter.compilation import build_module, generated_source
from mlc_jupyter.compilation.default_schedule import SCHEDULED, has_operators
from mlc_jupyter.errors import BuildError

X = torch.randn(1, 784)


@pytest.fixture
def imported(book_mlp):
    return book_mlp[1]  # imported once per session (conftest.py)


def test_a_model_build_schedules_every_kernel_its_operators_make(imported):
    built = build_module(imported)
    kernels = prim_funcs(built.mod)
    assert len(kernels) == 2
    for func in kernels.values():
        assert bool(func.attrs[SCHEDULED])
        assert "T.parallel" in func.script() and "T.vectorized" in func.script()
    assert built.notes == ("2 kernel(s) of the model's operators got default schedules",)


def test_without_schedules_the_build_is_what_tvm_makes_and_both_agree(imported):
    raw = build_module(imported, schedule="none")
    assert not prim_funcs(raw.mod) and has_operators(raw.mod)  # TVM legalises while compiling
    np.testing.assert_allclose(
        raw(X.numpy()), build_module(imported)(X.numpy()), rtol=1e-4, atol=1e-5
    )


def test_kernels_written_by_hand_keep_their_loops():
    mixture = listing("ch3_mixture.py", "MyModuleMixture")
    assert not has_operators(mixture)
    built = build_module(mixture)
    assert built.notes == ()
    assert "T.parallel" not in built.mod["linear0"].script()


def test_a_model_builds_for_cuda_with_dlight_schedules(imported):
    built = build_module(imported, "cuda")
    source = generated_source(built, "cuda")
    assert "__global__" in source and "threadIdx.x" in source


def test_an_unknown_schedule_is_refused(imported):
    with pytest.raises(BuildError, match="unknown schedule 'fast'"):
        build_module(imported, schedule="fast")
