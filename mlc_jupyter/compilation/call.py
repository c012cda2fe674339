"""Call a built function with NumPy arrays, PyTorch tensors or TVM tensors.

Inputs are copied into aligned TVM tensors (a misaligned NumPy buffer can crash a kernel that
assumes 64-byte alignment). Arguments are checked against the signature first, extern symbols
that the process cannot resolve are refused before the JIT would segfault, and a GPU build
says plainly that no GPU is present instead of failing deep in TVM.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import BuildError, CallError, NoGPUError, error_reason
from ..origins import cell_place
from ..tvm_compat import (
    BOUND_CHECK_MESSAGE,
    empty,
    is_array,
    tensor,
    tensor_type,
    tvm,
)
from .bounds import stopped_out_of_bounds
from .signatures import Signature, missing_symbols
from .targets import device_for, gpu_present, is_gpu_target, target_kind
from .tir_walk import extern_calls


def array_kind(value: Any) -> str:
    """``torch``, ``numpy``, ``tvm`` or ``other``: what kind of array a caller passed."""
    module = type(value).__module__ or ""
    if module.startswith("torch"):
        return "torch"
    if module.startswith("numpy"):
        return "numpy"
    if isinstance(value, tensor_type()):
        return "tvm"
    return "other"


def as_numpy(value: Any) -> Any:
    """A NumPy array holding ``value``'s data (a PyTorch tensor's and a TVM tensor's too)."""
    kind = array_kind(value)
    if kind == "torch":
        return value.detach().cpu().numpy()
    if kind == "tvm":
        return value.numpy()
    return np.asarray(value)


def check_argument(sig: Signature, index: int, value: Any) -> None:
    """Raise ``CallError`` when argument ``index`` disagrees with the signature's shape or dtype."""
    param = sig.params[index]
    if param.scalar:
        scalar_argument(sig, index, value)
        return
    shape = tuple(getattr(value, "shape", ()))
    dtype = str(getattr(value, "dtype", "")).replace("torch.", "")
    if param.shape is not None:
        ok = len(shape) == len(param.shape) and all(
            want is None or int(got) == want for got, want in zip(shape, param.shape, strict=False)
        )
        if not ok:
            raise CallError(
                f"{sig.name}: argument {param.name!r} has shape {tuple(int(s) for s in shape)}, "
                f"expected {param.describe()}"
            )
    if param.dtype and dtype and dtype != param.dtype:
        raise CallError(
            f"{sig.name}: argument {param.name!r} has dtype {dtype}, expected {param.describe()}"
        )


def scalar_argument(sig: Signature, index: int, value: Any) -> int | float | bool:
    """Argument ``index`` for a scalar parameter as the Python number TVM passes (a NumPy or
    0-d array's value too); a ``CallError`` for an array, a non-number, a fraction for an
    integer or a value outside the integer's range."""
    param = sig.params[index]
    expected = f"expected {param.describe()} (a number)"
    shape = tuple(getattr(value, "shape", ()))
    if shape:
        raise CallError(
            f"{sig.name}: argument {param.name!r} has shape {tuple(int(s) for s in shape)}, "
            f"{expected}"
        )
    item = as_numpy(value).item() if array_kind(value) in ("numpy", "torch", "tvm") else value
    if not isinstance(item, numbers.Real):  # bool and NumPy's numbers are Real too
        raise CallError(
            f"{sig.name}: argument {param.name!r} is a {type(value).__name__}, {expected}"
        )
    kind = np.dtype(param.dtype).kind
    if kind == "f":
        return float(item)
    if kind == "b":
        return bool(item)
    if not float(item).is_integer():
        raise CallError(
            f"{sig.name}: argument {param.name!r} is {item!r}, expected {param.describe()} "
            "(a whole number)"
        )
    whole, limits = int(item), np.iinfo(param.dtype)
    if not limits.min <= whole <= limits.max:
        raise CallError(
            f"{sig.name}: argument {param.name!r} is {whole}, outside {param.dtype}'s range "
            f"{limits.min}..{limits.max}"
        )
    return whole


def prepare(built: Any, name: str | None, *, local: bool = True) -> Signature:
    """The signature of ``name`` (or the only / ``main`` function), after the run-time checks.

    ``local=False``: the module runs on an RPC server, so no local GPU is needed.
    """
    sigs = built.signatures
    if name is None:
        name = "main" if "main" in sigs or len(sigs) != 1 else next(iter(sigs))
    if name not in sigs:
        raise CallError(f"no function {name!r} in this build; it has {', '.join(sigs)}")
    missing = missing_symbols(set(built.extern_symbols))
    if missing:
        raise BuildError(
            f"extern symbol(s) {', '.join(missing)}{_called_at(built.mod, missing)} are not "
            "defined in this process; calling the kernel would crash Python",
            hint="load the library that defines them (ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL))"
            " or provide them with pragma_import_llvm",
        )
    if local:
        require_device_here(built.target, f"{name} was built for")
    return sigs[name]


def require_device_here(target: Any, what: str = "the target is") -> None:
    """Raise ``NoGPUError`` when ``target`` runs on a GPU this machine does not have.

    Called before anything is built or run for a local measurement, so every GPU path without
    a GPU stops at once with the same message.
    """
    if is_gpu_target(target) and not gpu_present(target):
        kind = target_kind(target)
        raise NoGPUError(
            f"no GPU is present: {what} {kind} and cannot run here",
            hint="run and time it on a GPU machine with --rpc HOST:PORT:KEY (or set"
            " TVM_TRACKER_HOST/PORT/KEY); the code is readable: %mlc_build ... --show cuda",
        )


def argument_count(sig: Signature, args: tuple[Any, ...]) -> tuple[int, int]:
    """``(parameters, inputs)`` of ``sig``; a ``CallError`` unless ``args`` passes one or the
    other (only the inputs: the call allocates the outputs)."""
    n_all, n_in = len(sig.params), len(sig.inputs)
    if sig.relax:
        n_all = n_in = len(sig.params)
    if len(args) not in (n_all, n_in):
        wanted = f"{n_in} inputs" + (f" (or {n_all} with outputs)" if n_all != n_in else "")
        raise CallError(
            f"{sig.name} takes {wanted}: {', '.join(p.describe() for p in sig.params)}; "
            f"got {len(args)} argument(s)"
        )
    return n_all, n_in


def to_device(
    built: Any, sig: Signature, args: tuple[Any, ...], device: Any = None
) -> tuple[list[Any], int]:
    """TVM tensors for ``args`` (allocating outputs when only inputs are given) on ``device``
    (default: the local device of the build's target).

    Returns the tensors and the number of outputs allocated here.
    """
    n_all, n_in = argument_count(sig, args)
    dev = device_for(built.target) if device is None else device
    tensors = []
    for index, value in enumerate(args):
        if sig.params[index].scalar:
            tensors.append(scalar_argument(sig, index, value))
            continue
        check_argument(sig, index, value)
        tensors.append(tensor(as_numpy(value).copy(), device=dev))
    allocated = 0
    if len(args) == n_in and n_all != n_in:
        for param in sig.outputs:
            if param.shape is None or None in param.shape:
                raise CallError(f"{sig.name}: pass output {param.name!r}, its shape is symbolic")
            tensors.append(empty(param.shape, param.dtype, dev))
            allocated += 1
    return tensors, allocated


def relax_vm(built: Any, remote: Any = None) -> Any:
    """A Relax virtual machine over a Relax build, on the device of its target (or, with
    ``remote``, a :class:`~.remote.RemoteModules`, on an RPC server's)."""
    if remote is not None:
        return tvm().relax.VirtualMachine(remote.load(built), remote.device(built.target))
    return tvm().relax.VirtualMachine(built.executable, device_for(built.target))


def _called_at(mod: Any, symbols: list[str]) -> str:
    """`` (called at In [5] line 40)``: the cell line of the first call of one of ``symbols``."""
    bodies = [func.body for _, func in mod.functions_items() if hasattr(func, "body")]
    for body in bodies:
        for symbol, stmt in extern_calls(body):
            place = cell_place(getattr(stmt, "span", None)) if symbol in symbols else None
            if place is not None:
                return f" (called at {place.describe()})"
    return ""


def compiled_symbol(mod: Any, name: str) -> str:
    """The symbol TVM compiles function ``name`` of ``mod`` under: its ``global_symbol``
    attribute when it has one (a ``def`` renamed after ``T.func_attr`` was written keeps it)."""
    try:
        attrs = mod[name].attrs
    except (KeyError, ValueError, AttributeError):
        return name
    symbol = attrs.get("global_symbol") if attrs is not None else None
    return str(symbol) if symbol else name


def runtime_function(built: Any, name: str, remote: Any = None) -> Any:
    """The function to call (through the Relax VM for Relax builds); ``remote`` runs it on an
    RPC server instead.

    A failure inside the kernel or the VM is a :class:`CallError` with TVM's reason (a shape that
    disagrees with an earlier one, say) instead of a traceback through TVM's runtime; a bound
    check of a checked build that fails is an :class:`OutOfBoundsError`.
    """
    if built.relax:
        func = relax_vm(built, remote)[name]
    else:
        module = remote.load(built) if remote is not None else built.executable.mod
        func = module[compiled_symbol(built.mod, name)]

    def call(*args: Any) -> Any:
        try:
            return func(*args)
        except Exception as err:  # noqa: BLE001 - TVM raises many types; keep its reason
            if getattr(built, "checked", False) and BOUND_CHECK_MESSAGE in str(err):
                raise stopped_out_of_bounds(built.mod, name) from None
            raise CallError(f"{name} failed at run time: {error_reason(err)}") from None

    return call


def copy_into_callers(values: tuple[Any, ...], tensors: list[Any]) -> None:
    """Copy each of ``tensors`` (TVM tensors or NumPy arrays) into the caller's array in
    ``values`` (NumPy, PyTorch or TVM), so a call writes where the caller expects."""
    for value, out in zip(values, tensors, strict=False):
        kind = array_kind(value)
        if kind == "numpy" and value.flags.writeable:
            np.copyto(value, as_numpy(out))
        elif kind == "torch":
            import torch  # deferred: optional, and slow to import

            value.copy_(torch.from_numpy(as_numpy(out)))
        elif kind == "tvm":
            value.copyfrom(out)


def written_indices(sig: Signature) -> list[int]:
    """Positions of the parameters the function writes: its outputs and in-place inputs."""
    n_params = len(sig.params)
    return [
        i
        for i, p in enumerate(sig.params)
        if p.name in sig.written or i >= n_params - sig.n_outputs
    ]


def array_indices(sig: Signature, n_args: int) -> list[int]:
    """Positions of the arguments that are arrays (a scalar is passed by value: nothing to copy back)."""
    return [i for i in range(n_args) if i >= len(sig.params) or not sig.params[i].scalar]


def as_kind(out: Any, like: str) -> Any:
    """A result (a TVM tensor, or a NumPy array copied back from an isolated worker) as the kind
    of array the call was given; a tuple of outputs as a tuple."""
    if is_array(out) or isinstance(out, (tuple, list)):
        return tuple(as_kind(item, like) for item in out)
    if like == "torch":
        import torch  # deferred: optional, and slow to import

        return torch.from_numpy(out if isinstance(out, np.ndarray) else out.numpy())
    if like == "numpy" and isinstance(out, tensor_type()):
        return out.numpy()
    if like == "tvm" and isinstance(out, np.ndarray):
        return tensor(out)
    return out


def _on_device(value: Any, device: Any) -> bool:
    """A TVM tensor already on ``device``: a call can hand it to the kernel as it is."""
    if array_kind(value) != "tvm":
        return False
    where = value.device
    return int(where.dlpack_device_type()) == int(device.dlpack_device_type()) and int(
        where.index
    ) == int(device.index)


def in_place_arguments(built: Any, sig: Signature, args: tuple[Any, ...]) -> list[Any] | None:
    """``args`` themselves when every one is a TVM tensor on the build's device and the call
    passes every parameter: the kernel then writes the caller's tensors, as TVM's own call does
    (``None`` otherwise: the arguments need copying)."""
    device = device_for(built.target)
    if sig.relax or len(args) != len(sig.params):
        return None
    arrays = [value for p, value in zip(sig.params, args, strict=True) if not p.scalar]
    if not all(_on_device(value, device) for value in arrays):
        return None
    passed = []
    for index, value in enumerate(args):
        if sig.params[index].scalar:
            value = scalar_argument(sig, index, value)
        else:
            check_argument(sig, index, value)
        passed.append(value)
    return passed


def call_arguments(
    built: Any, sig: Signature, args: tuple[Any, ...]
) -> tuple[list[Any], int, Callable[[], None]]:
    """The tensors to call ``sig`` with, how many outputs were allocated, and what copies the
    written arguments back into the caller's arrays after the call.

    TVM tensors on the build's device are passed as they are (nothing to copy back); anything
    else is copied into aligned tensors, and afterwards the arguments the kernel wrote (its
    outputs and in-place inputs; every argument when the TIR does not show it, as when an extern
    call writes) are copied back.
    """
    direct = in_place_arguments(built, sig, args)
    if direct is not None:
        return direct, 0, lambda: None
    tensors, allocated = to_device(built, sig, args)

    def copy_back() -> None:
        if allocated or sig.relax:
            return
        written = written_indices(sig) or array_indices(sig, len(args))
        copy_into_callers(tuple(args[i] for i in written), [tensors[i] for i in written])

    return tensors, allocated, copy_back


def bound_function(built: Any, name: str | None) -> Any:
    """A Python callable for function ``name`` of ``built``.

    TVM tensors on the build's device are handed to the kernel as they are (it writes them in
    place, as TVM's own call does); NumPy arrays and PyTorch tensors are copied into aligned
    tensors and every argument is copied back after the call.
    """
    sig = prepare(built, name)
    func = runtime_function(built, sig.name)

    def call(*args: Any) -> Any:
        tensors, allocated, copy_back = call_arguments(built, sig, args)
        like = array_kind(args[0]) if args else "numpy"
        like = "numpy" if like == "other" else like
        result = func(*tensors)
        if sig.relax:
            return as_kind(result, like)
        if allocated:
            outs = [as_kind(t, like) for t in tensors[-allocated:]]
            return outs[0] if len(outs) == 1 else tuple(outs)
        copy_back()
        return None

    call.__name__ = sig.name
    call.built = built  # type: ignore[attr-defined] - lets %mlc_time find the module again
    call.func_name = sig.name  # type: ignore[attr-defined]
    call.__doc__ = f"{sig.name}({', '.join(p.describe() for p in sig.params)})"
    return call
