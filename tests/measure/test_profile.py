"""Each kernel of a real Relax build on this machine's roofline: its bytes, intensity, bound and
share of the roof over it (relations between the figures, never a timed assert)."""

from __future__ import annotations

import ctypes
import threading

import pytest

from mlc_jupyter.compilation.model_costs import kernel_calls
from mlc_jupyter.measure.profile import KernelProfile, KernelTime, profile_kernels


@pytest.fixture
def mlp_profile(book_mlp_profile) -> KernelProfile:
    return book_mlp_profile  # made once per session (conftest.py)


def test_each_kernel_counts_the_bytes_of_its_arguments(mlp_profile):
    first = next(k for k in mlp_profile.kernels if k.flops and k.flops > 2e5)
    # x (784), the 784x128 weights, the bias and the output (128), fp32, read or written once
    assert first.bytes == 4 * (784 + 784 * 128 + 128 + 128)
    assert first.intensity == pytest.approx(first.flops / first.bytes)


def test_a_batch_one_dense_layer_is_memory_bound_and_measured_against_the_bandwidth(mlp_profile):
    assert mlp_profile.peak_gflops and mlp_profile.bandwidth_gbs and not mlp_profile.no_roof
    assert mlp_profile.ridge == pytest.approx(mlp_profile.peak_gflops / mlp_profile.bandwidth_gbs)
    for k in mlp_profile.kernels:
        # a matrix-vector product does 2 flop per 4-byte weight: far below any CPU's ridge
        assert k.intensity < 1 < mlp_profile.ridge
        assert mlp_profile.bound(k) == "memory"
        share = mlp_profile.roof_share(k)
        # the memory roof is intensity x bandwidth: the share is the bytes' rate over it
        assert share == pytest.approx(k.gflops / (k.intensity * mlp_profile.bandwidth_gbs))
        # ... far above the compute peak's share, the figure this breakdown used to show
        assert share > 5 * k.gflops / mlp_profile.peak_gflops


def test_a_kernel_above_the_ridge_is_compute_bound_and_measured_against_the_peak():
    dense = KernelTime("big_matmul", 1, 0.01, flops=2e9, bytes=1.2e7)  # 167 flop/byte
    copy = KernelTime("transpose", 1, 0.001, bytes=8e6)  # no FLOPs: a copy moves bytes only
    profile = KernelProfile(
        "m", (dense, copy), 0.0, 0.011, 1, peak_gflops=400.0, bandwidth_gbs=20.0, cores=2
    )
    assert profile.bound(dense) == "compute"
    assert profile.roof_share(dense) == pytest.approx(200 / 400)
    assert profile.bound(copy) == "memory"
    assert profile.roof_share(copy) == pytest.approx(8 / 20)


def test_without_the_machine_limits_no_kernel_gets_a_bound():
    k = KernelTime("k", 1, 1e-3, flops=1e6, bytes=1e6)
    profile = KernelProfile("m", (k,), 0.0, 1e-3, 1, no_roof="no roof: not measured")
    assert profile.ridge is None and profile.bound(k) is None and profile.roof_share(k) is None


@pytest.fixture(scope="module")
def separable_block():
    """The default CPU build of a MobileNet depthwise-separable block (cheap: three kernels)."""
    import torch
    from model_support import mobilenet_block

    from mlc_jupyter.compilation import build_module
    from mlc_jupyter.models import import_model

    return build_module(import_model(mobilenet_block(), torch.randn(1, 32, 28, 28)))


def test_each_kernel_call_of_the_model_is_one_row_call_counted_once(separable_block):
    profile = profile_kernels(separable_block, runs=2)
    called = {
        name.removesuffix("_prepacked"): n
        for name, n in kernel_calls(separable_block.mod).items()
        if n
    }
    assert {k.name: k.calls for k in profile.kernels} == called  # no VM builtin, nothing twice
    assert profile.beyond_kernels_s == pytest.approx(max(0.0, profile.total_s - profile.kernel_s))


def test_the_kernel_calls_and_the_whole_model_are_sampled_in_turns(separable_block, monkeypatch):
    # A slow spell of a shared machine (a core taken for a few milliseconds) used to fall on
    # every sample of the few kernels timed during it, and a kernel at its roof read half of
    # it; or on the whole model's samples, timed after all the kernels, and its time beyond
    # them read as the VM's. In turns, each round samples every call once and then the whole
    # model, so the spell costs each row one sample.
    from mlc_jupyter.measure import profile

    sampled: list[str] = []

    def spy_on(timer, name):
        def sample(*args):
            sampled.append(name)
            return timer(*args)

        return sample

    real_timer, real_vm = profile.kernel_timer, profile.relax_vm

    class _Vm:  # the real VM; its whole-model evaluator records each sample
        def __init__(self, built):
            self._vm = real_vm(built)

        def __getitem__(self, name):
            return self._vm[name]

        def set_instrument(self, func):
            self._vm.set_instrument(func)

        def time_evaluator(self, *args, **kwargs):
            return spy_on(self._vm.time_evaluator(*args, **kwargs), "the whole model")

    monkeypatch.setattr(
        profile, "kernel_timer", lambda lib, symbol, *a: spy_on(real_timer(lib, symbol, *a), symbol)
    )
    monkeypatch.setattr(profile, "relax_vm", _Vm)
    result = profile_kernels(separable_block, runs=3)
    calls = sum(k.calls for k in result.kernels)
    first_round = sampled[: calls + 1]
    assert sampled == first_round * 3  # each round: every call once, in the model's order
    assert first_round[-1] == "the whole model" and len(set(first_round[:-1])) > 1


def test_a_build_compiled_in_parts_gets_a_row_for_the_kernels_of_every_part(separable_block):
    from mlc_jupyter.compilation.cached_build import fresh_build

    # compiled again in this process, one part per core, and not loaded back from disk: the
    # kernels are in one library per part (the rows of all but the first went missing, their
    # time counted as the VM's)
    in_parts = fresh_build(separable_block)
    profile = profile_kernels(in_parts, runs=2)
    called = {
        name.removesuffix("_prepacked"): n for name, n in kernel_calls(in_parts.mod).items() if n
    }
    assert {k.name: k.calls for k in profile.kernels} == called


class _GilHolder:
    """Another Python thread of the process that holds the GIL in turns without using the CPU
    (as a C extension does while it waits): libc's ``usleep`` called through ``PyDLL``."""

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._hold, daemon=True)

    def _hold(self) -> None:
        usleep = ctypes.PyDLL(None).usleep
        while not self._stop.is_set():
            usleep(3000)

    def __enter__(self) -> None:
        self._thread.start()

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def test_a_thread_holding_the_gil_does_not_inflate_the_kernels_rows(separable_block):
    # The kernels used to be timed from the VM's Python instrument: each call waited for the
    # GIL, and a small kernel's row read a thread switch (milliseconds) instead of its own time
    # (tens of microseconds). Timed in turns, with and without such a thread: a relation. The
    # GIL's cost was in every sample; another process on a shared machine (a CI runner) only
    # sometimes takes a core from a parallel kernel, so the relation must hold in one of three
    # turns, not in each. The relations: the rows are not inflated beside the thread, and the
    # thread does not make them disagree with the model's time (beside it they may where other
    # processes were busy, or where they disagreed alone too).
    turns = []
    for _ in range(3):
        alone = profile_kernels(separable_block, runs=3)
        with _GilHolder():
            beside = profile_kernels(separable_block, runs=3)
        turns.append((alone, beside))
        inflated = beside.kernel_s >= 3 * alone.kernel_s + 3e-4
        if not inflated and (not beside.disturbed or beside.busy or alone.disturbed):
            break
    else:
        pytest.fail(
            "beside a thread holding the GIL the kernels read "
            + ", ".join(
                f"{b.kernel_s * 1e3:.3f} ms of a {b.total_s * 1e3:.3f} ms model (alone "
                f"{a.kernel_s * 1e3:.3f} of {a.total_s * 1e3:.3f})"
                for a, b in turns
            )
        )
