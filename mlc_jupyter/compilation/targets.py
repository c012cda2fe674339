"""One parser for every way a user names a target (shared by every magic), and the one place that
asks what a target is: :func:`is_cpu`, :func:`is_cuda`, :func:`is_gpu_target`, :func:`device_kind`
(``tests/test_layers.py`` fails on a target's kind compared by hand anywhere else).

``llvm`` / ``cpu`` and the course's strings (``"llvm -num-cores=2"``) mean *this* CPU: TVM 0.27's
plain ``{"kind": "llvm"}`` emits SSE-only code, so ``mcpu`` is set to the host CPU unless the user
names one. ``cuda`` / ``gpu`` / tags (``nvidia/nvidia-h100``) / dicts / ``Target`` objects work too.
"""

from __future__ import annotations

import functools
import json
import shlex
from pathlib import Path
from typing import Any

from ..config import default_target
from ..errors import TargetError, error_reason
from ..tvm_compat import host_cpu, tvm

_ALIASES = {"cpu": "llvm", "gpu": "cuda"}
#: Kinds whose code runs on a GPU (a target with the ``gpu`` key too).
_GPU_KINDS = {"cuda", "rocm", "vulkan", "metal", "opencl", "webgpu", "nvptx"}
#: Kinds whose code runs on the host CPU: LLVM's (the project's CPU target) and C source.
_HOST_KINDS = {"llvm", "c"}


def _value(text: str) -> Any:
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    return text


def _parse_string(spec: str) -> dict[str, Any] | str:
    """``"llvm -num-cores=2 --mcpu=znver4"`` -> a dict; a tag or bare kind is returned as is.

    A JSON object is read as one: it is what ``str()`` of a target prints, so a target survives a
    round trip through its text (a cache key, a file, a magic's argument).
    """
    if spec.lstrip().startswith("{"):
        try:
            return json.loads(spec)  # text opening with "{" is an object or does not parse
        except ValueError as err:
            raise TargetError(f"cannot read target {spec!r}: {err}") from None
    try:
        words = shlex.split(spec.strip().strip('\x27"'))
    except ValueError as err:
        raise TargetError(f"cannot read target {spec!r}: {err}") from None
    if not words:
        raise TargetError("empty target: write e.g. 'llvm' or 'cuda'")
    kind = _ALIASES.get(words[0], words[0])
    if len(words) == 1:
        return kind if "/" in kind else {"kind": kind}
    config: dict[str, Any] = {"kind": kind}
    for word in words[1:]:
        if not word.startswith("-"):
            raise TargetError(
                f"cannot read {word!r} in target {spec!r}", hint="flags look like -name=value"
            )
        name, _, val = word.lstrip("-").partition("=")
        config[name] = _value(val) if val else True
    return config


def _check_options(config: dict[str, Any]) -> None:
    kind = str(config.get("kind", ""))
    _tvm = tvm()
    if kind not in _tvm.target.Target.list_kinds():
        known = ", ".join(["cpu", "gpu", *sorted(_tvm.target.Target.list_kinds())])
        raise TargetError(f"unknown target kind {kind!r}", hint=f"known kinds: {known}")
    known_opts = set(_tvm.target.TargetKind.options_from_name(kind))
    for name in config:
        if name not in known_opts:
            raise TargetError(
                f"unknown flag {name!r} for target kind {kind!r}",
                hint="known flags: " + ", ".join(sorted(known_opts - {"kind"})),
            )


def resolve_target(spec: Any = None) -> Any:
    """A ``tvm.target.Target`` for ``spec`` (``None`` = the configured default, ``llvm``).

    CPU targets get ``mcpu`` = this machine's CPU unless ``spec`` names one.
    Raises ``TargetError`` naming the flag or kind that is not understood.
    """
    _tvm = tvm()
    if spec is None:
        spec = default_target()
    if isinstance(spec, _tvm.target.Target):
        if spec.kind.name == "llvm" and "mcpu" not in spec.attrs:
            return _tvm.target.Target({**_to_dict(spec), "mcpu": host_cpu()})
        return spec
    if isinstance(spec, str):
        spec = _parse_string(spec)
    if isinstance(spec, dict):
        spec = dict(spec)
        spec["kind"] = _ALIASES.get(str(spec.get("kind", "")), spec.get("kind"))
        _check_options(spec)
        if spec["kind"] == "llvm":
            spec.setdefault("mcpu", host_cpu())
        elif spec["kind"] == "cuda" and "arch" not in spec and not _cuda_device_exists():
            # TVM would ask the missing GPU, warn on stderr at every build, and pick this anyway
            spec["arch"] = NO_GPU_CUDA_ARCH
    elif not isinstance(spec, str):
        raise TargetError(f"a target is a string, a dict or a tvm.target.Target, not {spec!r}")
    try:
        return _tvm.target.Target(spec)
    except Exception as err:  # noqa: BLE001 - TVM raises ValueError / TVMError here
        raise TargetError(f"cannot use target {spec!r}: {error_reason(err)}") from None


#: The CUDA architecture of a ``cuda`` build when no GPU can tell it. TVM's own fallback, sm_50,
#: is one CUDA 13's nvcc no longer compiles for; sm_80 (Ampere: bf16, async copies, mma tensor
#: cores) is compiled by every nvcc from CUDA 11.0 to 13, so kernels can be checked at build time.
NO_GPU_CUDA_ARCH = "sm_80"


def _cuda_device_exists() -> bool:
    try:
        return bool(tvm().cuda(0).exist)
    except Exception:  # noqa: BLE001 - a disabled device API raises instead of saying False
        return False


def _to_dict(target: Any) -> dict[str, Any]:
    return json.loads(str(target))


def _resolved(target: Any) -> Any:
    """``target`` as a ``Target``: one already resolved is taken as it is."""
    return target if isinstance(target, tvm().target.Target) else resolve_target(target)


def core_cache_bytes(target: Any) -> int | None:
    """One core's L2 cache in bytes where ``target`` is this machine's CPU (read from Linux's
    sysfs), else ``None``: LLVM's CPU names carry no cache sizes, and a schedule rule that keeps
    a weight in a core's cache must not guess another machine's."""
    target = _resolved(target)
    if not is_cpu(target) or str(target.attrs.get("mcpu", "")) != host_cpu():
        return None
    return _host_l2_bytes()


@functools.cache
def _host_l2_bytes() -> int | None:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            level = (index / "level").read_text().strip()
            kind = (index / "type").read_text().strip()
            size = (index / "size").read_text().strip()
        except OSError:
            continue
        if level == "2" and kind in ("Unified", "Data") and size:
            return int(size.rstrip("KMG")) * units.get(size[-1], 1)
    return None


def target_kind(target: Any) -> str:
    """The kind of a target in any spelling (``llvm``, ``cuda`` ...)."""
    return str(_resolved(target).kind.name)


def is_cpu(target: Any) -> bool:
    """True when ``target`` (any spelling) is the project's CPU target: this CPU through LLVM
    (vector registers, ``mcpu``, ``num-cores``)."""
    return target_kind(target) == "llvm"


def is_cuda(target: Any) -> bool:
    """True when ``target`` (any spelling) builds CUDA kernels."""
    return target_kind(target) == "cuda"


def device_kind(target: Any) -> str:
    """The device type a build for ``target`` runs on, as TVM's ``device()`` and PyTorch name
    it: ``cpu`` for code that runs on the host (LLVM's, C source), else the kind (``cuda`` ...)."""
    kind = target_kind(target)
    return "cpu" if kind in _HOST_KINDS else kind


#: What a GPU target needs to know about its device, and how to ask a (local or RPC) device.
_DEVICE_LIMITS = {
    "max_threads_per_block": lambda dev: int(dev.max_threads_per_block),
    "max_shared_memory_per_block": lambda dev: int(dev.max_shared_memory_per_block),
    "thread_warp_size": lambda dev: int(dev.warp_size),
}


def device_target(spec: Any, dev: Any) -> Any:
    """The GPU target ``spec`` completed by what device ``dev`` says about itself.

    ``dev`` may be local or on an RPC server. Its architecture (CUDA) and limits fill what
    ``spec`` leaves open; what ``spec`` names (``-arch``, a tag) is kept. MetaSchedule's GPU
    rules need the limits (``max_threads_per_block``...), which a plain ``cuda`` lacks.
    """
    _tvm = tvm()
    if isinstance(spec, _tvm.target.Target):
        config = _to_dict(spec)
    elif isinstance(spec, str) and "/" not in spec:
        config = _parse_string(spec)
    elif isinstance(spec, dict):
        config = dict(spec)
    else:
        config = _to_dict(resolve_target(spec))  # a tag names a whole device
    config["kind"] = _ALIASES.get(str(config.get("kind", "")), config.get("kind"))
    version = getattr(dev, "compute_version", None) if config["kind"] == "cuda" else None
    if version and "arch" not in config:
        config["arch"] = "sm_" + str(version).replace(".", "")
    for key, ask in _DEVICE_LIMITS.items():
        if key not in config:
            try:
                config[key] = ask(dev)
            except Exception:  # noqa: BLE001,S112 - a device API that does not know it
                continue
    return resolve_target(config)


def is_gpu_target(target: Any) -> bool:
    """True when ``target`` (any spelling) runs on a GPU: the one definition of a GPU."""
    target = _resolved(target)
    return str(target.kind.name) in _GPU_KINDS or "gpu" in list(target.keys)


def device_for(target: Any) -> Any:
    """The TVM device a module built for ``target`` runs on."""
    kind = device_kind(target)
    return tvm().cpu(0) if kind == "cpu" else tvm().runtime.device(kind, 0)


def gpu_present(target: Any = "cuda") -> bool:
    """True when the device of a GPU target exists on this machine."""
    try:
        return bool(device_for(target).exist)
    except Exception:  # noqa: BLE001 - a disabled device API raises instead of saying False
        return False


def describe_target(target: Any) -> str:
    """A short readable form, e.g. ``llvm -mcpu=znver4 -num-cores=2``."""
    target = resolve_target(target)
    parts = [str(target.kind.name)]
    for key, val in _to_dict(target).items():
        if key in ("kind", "tag", "keys", "host") or val in ("", None):
            continue
        parts.append(f"-{key}={val}")
    return " ".join(parts)
