"""The one target parser every magic shares: course strings, aliases, tags, dicts, errors."""

from __future__ import annotations

import pytest

from mlc_jupyter.compilation import (
    describe_target,
    device_kind,
    gpu_present,
    is_cpu,
    is_cuda,
    is_gpu_target,
    resolve_target,
)
from mlc_jupyter.errors import TargetError
from mlc_jupyter.tvm_compat import host_cpu, tvm


@pytest.mark.parametrize("spec", ["llvm", "cpu", {"kind": "llvm"}, None])
def test_cpu_targets_mean_this_cpu(spec):
    target = resolve_target(spec)
    assert target.kind.name == "llvm"
    assert str(target.attrs["mcpu"]) == host_cpu()


@pytest.mark.parametrize(
    ("spec", "cores"),
    [("llvm -num-cores=2", 2), ("llvm --num-cores=1", 1), ("cpu -num-cores=2", 2)],
)
def test_course_target_strings_with_flags_are_understood(spec, cores):
    target = resolve_target(spec)
    assert int(target.attrs["num-cores"]) == cores
    assert str(target.attrs["mcpu"]) == host_cpu()


def test_a_named_mcpu_is_kept():
    assert str(resolve_target("llvm -mcpu=znver4").attrs["mcpu"]) == "znver4"
    assert str(resolve_target({"kind": "llvm", "mcpu": "skylake"}).attrs["mcpu"]) == "skylake"


@pytest.mark.parametrize("spec", ["llvm -num-cores=2", "cuda", "nvidia/nvidia-h100"])
def test_a_target_s_own_text_resolves_to_the_same_target(spec):
    """``str()`` of a target is JSON; the GPU's limits are measured from that text, a cache key."""
    target = resolve_target(spec)
    again = resolve_target(str(target))
    assert str(again) == str(target)
    assert again.kind.name == target.kind.name


def test_a_json_target_that_does_not_parse_is_refused():
    with pytest.raises(TargetError, match="cannot read target"):
        resolve_target('{"kind": "llvm"')


def test_a_target_object_without_mcpu_gets_the_host_cpu():
    target = resolve_target(tvm().target.Target({"kind": "llvm"}))
    assert str(target.attrs["mcpu"]) == host_cpu()


@pytest.mark.parametrize("spec", ["cuda", "gpu", "nvidia/nvidia-h100", {"kind": "cuda"}])
def test_gpu_spellings_resolve_to_cuda(spec):
    target = resolve_target(spec)
    assert target.kind.name == "cuda"
    assert is_gpu_target(target)


def test_a_tag_keeps_its_architecture():
    assert str(resolve_target("nvidia/nvidia-h100").attrs["arch"]) == "sm_90a"


def test_cuda_without_a_gpu_builds_for_an_arch_nvcc_compiles_without_a_warning_each_time(capfd):
    if gpu_present("cuda"):
        pytest.skip("a GPU is present: TVM asks it for its architecture")
    assert str(resolve_target("cuda").attrs["arch"]) == "sm_80"  # TVM's own sm_50: not in CUDA 13
    assert "Unable to detect" not in capfd.readouterr().err
    assert str(resolve_target("cuda -arch=sm_80").attrs["arch"]) == "sm_80"  # a named arch stays


def test_cpu_targets_are_not_gpu_targets_and_are_present():
    assert not is_gpu_target("llvm -num-cores=2")
    assert gpu_present("llvm")


@pytest.mark.parametrize(
    ("spec", "cpu", "cuda", "gpu", "device"),
    [
        ("llvm", True, False, False, "cpu"),
        ("cpu", True, False, False, "cpu"),
        ("llvm -num-cores=2", True, False, False, "cpu"),
        ({"kind": "llvm", "mcpu": "znver3"}, True, False, False, "cpu"),
        ("c", False, False, False, "cpu"),
        ("cuda", False, True, True, "cuda"),
        ("gpu", False, True, True, "cuda"),
        ("nvidia/nvidia-h100", False, True, True, "cuda"),
        ("rocm", False, False, True, "rocm"),
        ("vulkan", False, False, True, "vulkan"),
    ],
)
def test_a_target_in_any_spelling_is_asked_one_way(spec, cpu, cuda, gpu, device):
    target = resolve_target(spec)
    for asked in (spec, target):  # a spelling, or a target resolved once at the edge
        assert is_cpu(asked) is cpu and is_cuda(asked) is cuda and is_gpu_target(asked) is gpu
        assert device_kind(asked) == device


def test_describe_shows_the_resolved_target():
    assert describe_target("llvm -num-cores=2") == f"llvm -num-cores=2 -mcpu={host_cpu()}"


def test_an_unknown_flag_is_named_in_the_error():
    with pytest.raises(TargetError, match="unknown flag 'num-corez' for target kind 'llvm'"):
        resolve_target("llvm -num-corez=2")


def test_an_unknown_flag_in_a_dict_is_named_too():
    with pytest.raises(TargetError, match="unknown flag 'bogus'"):
        resolve_target({"kind": "llvm", "bogus": 1})


def test_an_unknown_kind_lists_the_known_ones():
    with pytest.raises(TargetError, match="unknown target kind 'llvn'") as info:
        resolve_target("llvn")
    assert "cpu, gpu" in info.value.hint


def test_a_word_that_is_not_a_flag_is_refused():
    with pytest.raises(TargetError, match="cannot read 'num-cores=2'"):
        resolve_target("llvm num-cores=2")


def test_a_value_of_the_wrong_kind_is_refused():
    with pytest.raises(TargetError, match="a target is a string, a dict"):
        resolve_target(42)
