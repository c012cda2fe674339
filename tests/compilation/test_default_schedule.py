"""Default schedules: the kernels of a Relax model's operators are scheduled, hand-written ones not."""

from __future__ import annotations

import re

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


def _residual_stage(downsample_first: bool):
    """Two ResNet blocks, the first with a downsampling branch, that branch computed before or
    after the block's convolutions (torchvision computes it after)."""
    from torch import nn

    class Block(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.downsample = None
            if stride != 1:
                self.downsample = nn.Sequential(
                    nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
                )

        def forward(self, x):
            branch = self.downsample or nn.Identity()
            identity = branch(x) if downsample_first else None
            out = self.bn2(self.conv2(self.bn1(self.conv1(x)).relu()))
            return (out + (branch(x) if identity is None else identity)).relu()

    torch.manual_seed(0)
    return nn.Sequential(Block(8, 16, 2), Block(16, 16, 1)).eval()


def test_a_residual_add_fuses_into_the_blocks_convolution_whichever_branch_comes_first():
    """The add of a block with a downsampling branch joins the block's last 3x3 convolution as
    in the blocks without one, so that convolution is one kernel for all of them (a model's
    build compiles, and its tuning searches, one fewer per stage), however the model's code
    orders the branches; the build computes what PyTorch does."""
    from mlc_jupyter.compilation import resolve_target
    from mlc_jupyter.compilation.default_schedule import legalize_and_fuse
    from mlc_jupyter.models import import_model

    x = torch.randn(1, 8, 16, 16, generator=torch.Generator().manual_seed(1))
    kernels = {}
    for first in (True, False):
        model = _residual_stage(first)
        imported = import_model(model, x)
        fused = legalize_and_fuse(imported.mod, resolve_target("llvm"))
        kernels[first] = sorted(prim_funcs(fused))
        with_add = [name for name in kernels[first] if "add" in name]
        assert len(with_add) == 1 and "conv2d" in with_add[0], kernels[first]
        # both blocks' last convolution, with the add
        assert fused["main"].script().count(f"({with_add[0]},") == 2
        built = build_module(imported, persist=False)
        with torch.no_grad():
            expected = model(x).numpy()
        np.testing.assert_allclose(np.asarray(built(x.numpy())), expected, rtol=1e-4, atol=1e-4)
    # the same kernels (their names numbered in the order they were made)
    assert sorted(re.sub(r"\d+", "", n) for n in kernels[True]) == sorted(
        re.sub(r"\d+", "", n) for n in kernels[False]
    )
