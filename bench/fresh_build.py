"""Shared by the benches that compare default-build rules in one process: a model built anew
under whatever rule is patched in, its output and a timer of the whole model.

    from fresh_build import whole_model  # bench/ is the script's folder, so on sys.path
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class WholeModel:
    """One fresh build of a model: ``timer(*tensors).mean`` times a whole call; ``output`` is
    the first output of one call (NumPy), to compare builds made under different rules."""

    timer: Any
    tensors: Any
    output: Any
    built: Any


def whole_model(imported: Any, number: int = 10) -> WholeModel:
    """Build ``imported`` anew (nothing from the caches: every build shares the cache key, and
    the model's kernels are scheduled again) and return its timer, inputs and output."""
    from mlc_jupyter.compilation import build_module, clear_cache, device_for
    from mlc_jupyter.compilation.call import prepare, relax_vm, to_device
    from mlc_jupyter.measure.timer import model_inputs

    clear_cache(disk=False)
    built = build_module(imported, force=True, persist=False)
    sig = prepare(built, None)
    tensors, _ = to_device(built, sig, tuple(model_inputs(built, sig, None, 0)))
    vm = relax_vm(built)
    result = vm[sig.name](*tensors)
    output = (result if hasattr(result, "numpy") else result[0]).numpy()
    timer = vm.time_evaluator(sig.name, device_for(built.target), number=number)
    return WholeModel(timer, tensors, output, built)
