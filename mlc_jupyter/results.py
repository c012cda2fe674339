"""The result types that cross services which may not import each other; the rest live with
their makers.

A result type lives beside the service that makes it (a ``Built`` in
:mod:`~mlc_jupyter.compilation.cached_build`, a ``Timing`` in :mod:`~mlc_jupyter.measure.timer`,
a ``TuneResult`` in :mod:`~mlc_jupyter.tune.report` ...): whoever reads one may import its
maker. An :class:`ImportedModel` is made by ``models`` but built by ``compilation`` and tuned by
``tune``, which the layers forbid to import ``models``; so it, and the :class:`ModelSummary` it
carries, stay here in core. Like every result they are frozen and know nothing about display.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ModelSummary:
    """What an imported model holds: its operators, its weights and the kernels a build makes.

    ``ops`` counts each Relax operator in ``main`` (``("nn.conv2d", 20)``, most frequent first);
    ``kernels`` lists each kernel TVM will build after legalising and fusing, with how often
    ``main`` calls it.
    """

    ops: tuple[tuple[str, int], ...]
    n_params: int
    param_bytes: int
    kernels: tuple[tuple[str, int], ...]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]


@dataclass(frozen=True)
class ImportedModel:
    """A PyTorch model imported into Relax (``%mlc_import`` / ``import_model``).

    ``mod`` is the Relax IRModule (``%mlc_build``, ``%mlc_tune`` and ``%mlc_time`` take the
    result itself); ``example_args`` the NumPy arguments of ``main`` (the model's inputs, then the
    weights when they are kept as inputs); ``model`` the PyTorch module, the reference.
    """

    mod: Any
    model: Any
    example_args: tuple[Any, ...]
    summary: ModelSummary
    via: str = "export"
    params: str = "bound"
    import_s: float = 0.0
    stages: tuple[tuple[str, float], ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return type(self.model).__name__
