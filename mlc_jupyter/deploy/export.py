"""``%mlc_export``: a model build written out with a small loader, for plain Python programs.

The folder gets the shared library (``export_library``), a loader ``NAME.py`` that needs TVM's
runtime and NumPy (not mlc_jupyter, IPython or Jupyter), the weights when the model takes them as
inputs (``NAME_params.npz``), and the example inputs with the outputs the notebook's build gave
(``NAME_example.npz``): ``python NAME.py`` checks that the library gives them again on the machine
it runs on. The loader takes NumPy arrays (copied into aligned TVM tensors) or PyTorch tensors
(shared through DLPack, copied only when misaligned or strided) and returns the same kind.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..compilation import gpu_present, is_gpu_target
from ..compilation.call import prepare, runtime_function, to_device
from ..compilation.source import in_memory
from ..errors import DeployError, error_reason
from ..tvm_compat import LOADER_RUNTIME
from .built import model_build, model_inputs


@dataclass(frozen=True)
class Exported:
    """What ``%mlc_export`` wrote: the folder, the loader, the library and the data files."""

    folder: Path
    loader: Path
    library: Path
    data: tuple[Path, ...]

    def describe(self) -> str:
        files = [self.library, self.loader, *self.data]
        sizes = ", ".join(f"{p.name} ({_size(p)})" for p in files)
        checked = any(p.name.endswith("_example.npz") for p in self.data)
        check = f"check it: python {self.loader}" if checked else "no example to check it with"
        return (
            f"wrote {self.folder}: {sizes}\n"
            f"{check}\n"
            f"use it: sys.path.insert(0, {str(self.folder)!r}); import {self.loader.stem}; "
            f"model = {self.loader.stem}.load(); out = model(x)"
        )


def export_build(obj: Any, path: str | Path, name: str = "the model") -> Exported:
    """Write the build ``obj`` stands for (see :func:`.built.model_build`) to folder ``path``.

    Raises :class:`DeployError` for a model that is not built and for a path that cannot be
    written (the message names the path and the system's reason).
    """
    built = model_build(obj, name)
    folder = Path(path).expanduser()
    stem = _module_name(folder.name)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise DeployError(
            f"cannot write the export to {folder}: {err.strerror or err}",
            hint="give a folder that can be created or written",
        ) from None
    sig = prepare(built, "main", local=False)  # a GPU build exports on a machine without one
    runnable = not is_gpu_target(built.target) or gpu_present(built.target)
    n_inputs = model_inputs(built, sig)
    example = list(built.origin.example_args) if built.origin is not None else []
    library = folder / f"{stem}_lib.so"  # not NAME.so: Python would import it for NAME.py
    data = []
    try:
        _export_library(built, library)
        weights = example[n_inputs:]
        if weights:
            data.append(folder / f"{stem}_params.npz")
            np.savez(data[-1], *[np.asarray(w) for w in weights])
        if runnable and len(example) == len(sig.params):
            data.append(folder / f"{stem}_example.npz")
            _save_example(built, sig, example, n_inputs, data[-1])
        loader = folder / f"{stem}.py"
        loader.write_text(_loader_text(built, sig, n_inputs, stem, bool(weights), len(data) > 0))
    except OSError as err:
        raise DeployError(f"cannot write the export to {folder}: {err.strerror or err}") from None
    return Exported(folder, loader, library, tuple(data))


def _export_library(built: Any, library: Path) -> None:
    built = in_memory(built)  # a library loaded from disk cannot be exported again: compile it
    try:
        built.executable.export_library(str(library))
    except Exception as err:  # TVM raises many types for a failed link; show one line
        if isinstance(err, OSError):
            raise  # a path that cannot be written: said as such by the caller
        raise DeployError(f"TVM could not write the library: {error_reason(err)}") from None


def _save_example(built: Any, sig: Any, example: list[Any], n_inputs: int, path: Path) -> None:
    """The example inputs and the outputs this build gives for them."""
    tensors, _ = to_device(built, sig, tuple(example))
    result = runtime_function(built, "main")(*tensors)
    outputs = (
        result if isinstance(result, (tuple, list)) or not hasattr(result, "numpy") else [result]
    )
    arrays = {f"input_{i}": np.asarray(a) for i, a in enumerate(example[:n_inputs])}
    arrays.update({f"output_{i}": out.numpy() for i, out in enumerate(outputs)})
    np.savez(path, **arrays)


def _module_name(text: str) -> str:
    """A Python module name from a folder name (``resnet-18`` -> ``resnet_18``)."""
    name = re.sub(r"\W", "_", text) or "model"
    return f"model_{name}" if name[0].isdigit() else name


def _size(path: Path) -> str:
    size = path.stat().st_size
    return f"{size / 1e6:.1f} MB" if size >= 1e5 else f"{size / 1e3:.1f} kB"


def _loader_text(
    built: Any, sig: Any, n_inputs: int, stem: str, weights: bool, example: bool
) -> str:
    inputs = [(p.name, tuple(p.shape or ()), p.dtype) for p in sig.params[:n_inputs]]
    model = getattr(built.origin, "name", "") or "a Relax module"
    return _LOADER.format(
        stem=stem,
        model=model,
        target=str(built.target.kind.name),
        inputs=repr(inputs),
        weights=f'HERE / "{stem}_params.npz"' if weights else "None",
        example=f'HERE / "{stem}_example.npz"' if example else "None",
        runtime=LOADER_RUNTIME.strip(),
    )


_LOADER = '''"""{stem}: a TVM build of {model}, exported from a notebook by mlc_jupyter's %mlc_export.

Needs TVM's Python package and NumPy (not mlc_jupyter, IPython or Jupyter). In a program:

    import sys
    sys.path.insert(0, "path/to/this/folder")
    import {stem}
    model = {stem}.load()
    out = model(x)  # NumPy arrays in, NumPy out; PyTorch tensors in, PyTorch out

`python {stem}.py` runs the model on the inputs saved at export and compares its outputs with
the ones the notebook's build gave.
"""

import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import tvm

HERE = Path(__file__).resolve().parent
LIBRARY = HERE / "{stem}_lib.so"
TARGET_KIND = "{target}"
#: (name, shape, dtype) of each input of the model
INPUTS = {inputs}
WEIGHTS = {weights}
EXAMPLE = {example}
#: TVM's kernels assume buffers aligned to this many bytes
ALIGNMENT = 64

{runtime}


def _is_torch(value):
    return (type(value).__module__ or "").startswith("torch")


def _shareable(tensor):
    """A PyTorch tensor as TVM's kernels can read it in place (else an aligned copy)."""
    tensor = tensor.detach()
    if not tensor.is_contiguous():
        return tensor.contiguous()  # a fresh, aligned tensor
    return tensor if tensor.data_ptr() % ALIGNMENT == 0 else tensor.clone()


def _check(index, value):
    name, shape, dtype = INPUTS[index]
    got_shape = tuple(int(d) for d in getattr(value, "shape", ()))
    got_dtype = str(getattr(value, "dtype", "")).replace("torch.", "")
    if got_shape != tuple(shape) or got_dtype != dtype:
        raise ValueError(
            f"input {{name!r}} has shape {{got_shape}} and dtype {{got_dtype}}, "
            f"expected {{tuple(shape)}} {{dtype}}"
        )


def _outputs(result, as_torch):
    if isinstance(result, (tuple, list)) or type(result).__name__ == "Array":
        return tuple(_outputs(item, as_torch) for item in result)
    if _is_torch(result):
        return result
    if as_torch:
        import torch

        return torch.from_dlpack(result)
    return result.numpy()


class Model:
    """The exported model: call it with its inputs."""

    def __init__(self):
        self.device = _device(TARGET_KIND)
        self.main = _machine(str(LIBRARY), TARGET_KIND)["main"]
        self.weights = []
        if WEIGHTS is not None:
            with np.load(WEIGHTS) as saved:
                count = len(saved.files)
                self.weights = [_tensor(saved[f"arr_{{i}}"], self.device) for i in range(count)]

    def __call__(self, *inputs):
        if len(inputs) != len(INPUTS):
            raise ValueError(f"the model takes {{len(INPUTS)}} input(s), got {{len(inputs)}}")
        as_torch = bool(inputs) and all(_is_torch(x) for x in inputs)
        args = []
        for index, value in enumerate(inputs):
            _check(index, value)
            if _is_torch(value):
                args.append(_shareable(value))
            else:
                args.append(_tensor(np.ascontiguousarray(value), self.device))
        return _outputs(self.main(*args, *self.weights), as_torch)


def load():
    """The exported model, loaded on its device."""
    return Model()


def _self_check():
    if EXAMPLE is None:
        print("no example was saved with this export")
        return 0
    with np.load(EXAMPLE) as saved:
        inputs = [saved[f"input_{{i}}"] for i in range(len(INPUTS))]
        expected = [saved[k] for k in sorted(saved.files) if k.startswith("output_")]
    got = load()(*inputs)
    got = list(got) if isinstance(got, tuple) else [got]
    worst = max(float(np.max(np.abs(g - e), initial=0.0)) for g, e in zip(got, expected))
    ok = len(got) == len(expected) and all(
        np.allclose(g, e, rtol=1e-4, atol=1e-5) for g, e in zip(got, expected)
    )
    print(f"{{'ok' if ok else 'MISMATCH'}}: {{len(got)}} output(s), largest difference {{worst:.3g}}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(_self_check())
'''
