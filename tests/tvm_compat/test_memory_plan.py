"""Contract of tvm_compat/memory_plan.py: its build pipeline is TVM's default pass for pass, and
with the placement every planned tensor that shares a storage with larger ones lies across the
storage's middle, in a real build run by the VM. A failure names what TVM changed."""

from __future__ import annotations

import numpy as np
import torch

from mlc_jupyter import tvm_compat
from mlc_jupyter.compilation import build_module
from mlc_jupyter.compilation.call import prepare, relax_vm, to_device
from mlc_jupyter.compilation.signatures import as_module
from mlc_jupyter.models import import_model
from mlc_jupyter.tvm_compat import memory_plan


class Narrowing(torch.nn.Module):
    """Convolutions whose outputs shrink and grow: the memory plan puts tensors of several
    sizes in one storage."""

    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Conv2d(16, 64, 3, padding=1)
        self.b = torch.nn.Conv2d(64, 16, 3, stride=2, padding=1)
        self.c = torch.nn.Conv2d(16, 32, 1)
        self.d = torch.nn.Conv2d(32, 16, 3, stride=2, padding=1)
        self.e = torch.nn.Conv2d(16, 64, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for conv in (self.a, self.b, self.c, self.d, self.e):
            x = torch.relu(conv(x))
        return x.sum(dim=(2, 3))


def _relax_model():
    torch.manual_seed(0)
    return as_module(import_model(Narrowing().eval(), torch.randn(1, 16, 8, 8)))


def test_the_pipeline_without_the_placement_is_tvms_default():
    tvm = tvm_compat.tvm()
    target = tvm.target.Target({"kind": "llvm"})
    with target:
        ours = memory_plan.build_pipeline(middle=False)(_relax_model())
        theirs = tvm.relax.get_pipeline("default")(_relax_model())
    assert tvm_compat.structural_equal(ours, theirs), (
        "TVM's default Relax build pipeline changed: update memory_plan.build_pipeline's passes"
    )


def test_tensors_sharing_a_storage_lie_across_its_middle():
    torch.manual_seed(0)
    model = Narrowing().eval()
    x = torch.randn(1, 16, 32, 32)
    built = build_module(import_model(model, x), "llvm", persist=False, force=True)
    sig = prepare(built, None)
    tensors, _ = to_device(built, sig, (x.numpy(),))
    vm = relax_vm(built)
    outputs: list[tuple[int, int]] = []  # each kernel call's output: (data pointer, bytes)

    def record(func, symbol, before, ret, *args):
        if not before and args and hasattr(args[-1], "data_ptr"):
            out = args[-1]
            outputs.append((out.data_ptr(), out.numel() * np.dtype(str(out.dtype)).itemsize))
        return 0

    vm.set_instrument(record)
    got = vm[sig.name](*tensors)
    got = got.numpy() if hasattr(got, "numpy") else got[0].numpy()
    with torch.no_grad():
        np.testing.assert_allclose(got, model(x).numpy(), rtol=1e-4, atol=1e-4)
    shared = [
        (a, b)
        for i, a in enumerate(outputs)
        for b in outputs[i + 1 :]
        if a[1] != b[1] and a[0] < b[0] + b[1] and b[0] < a[0] + a[1]  # overlapping bytes
    ]
    assert shared, "no two kernel outputs of different sizes shared a storage: nothing to test"
    for (ptr_a, size_a), (ptr_b, size_b) in shared:
        middle_a, middle_b = ptr_a + size_a // 2, ptr_b + size_b // 2
        assert abs(middle_a - middle_b) <= memory_plan.ALIGNMENT, (
            f"a {size_a}-byte and a {size_b}-byte output share a storage but their middles are "
            f"{abs(middle_a - middle_b)} bytes apart"
        )


def test_the_middle_offset_is_aligned_and_centres_the_tensor():
    for storage, tensor in ((4096, 1024), (1000, 10), (64, 64), (3136 * 1024, 784 * 1024)):
        offset = memory_plan.middle_offset(storage, tensor)
        assert offset % memory_plan.ALIGNMENT == 0
        assert offset + tensor <= storage
        assert abs((offset + tensor / 2) - storage / 2) <= memory_plan.ALIGNMENT
