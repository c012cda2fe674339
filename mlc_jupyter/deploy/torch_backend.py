"""A ``torch.compile`` backend that builds each captured graph the way ``%mlc_build`` does.

TorchDynamo hands a backend one FX graph per region it captured (a graph break makes several)
with example inputs. Each graph is translated with TVM's FX importer, its operators legalised,
fused and given default schedules, the kernels a tuning run measured replaced by their tuned
schedules (``records=``), and built; the compiled function passes PyTorch tensors through
DLPack. Weights (the module's parameters and buffers, which Dynamo passes as graph inputs) are
bound into the build by default (``params="bound"``, as ``%mlc_import`` does): constants fold,
and a model's tuned kernels match. Like Inductor's freezing, a weight changed afterwards is not
seen until ``torch._dynamo.reset()``; ``params="inputs"`` passes them at every call instead.

``torch.compile(model, backend=torch_backend(records=rn_tuned))``, or, with the package
installed, ``torch.compile(model, backend="mlc_jupyter", options={...})``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from ..compilation import build_module, resolve_target
from ..compilation.cached_build import Built
from ..compilation.call import prepare, runtime_function
from ..compilation.default_schedule import has_operators, prepare_model
from ..errors import DeployError, error_reason
from ..models.importer import translate_graph
from ..tvm_compat import bind_inputs, torch_frontend
from .torch_tensors import as_torch, shareable
from .tuned_records import apply_records, work_dirs

PARAMS = ("bound", "inputs")


@dataclass(frozen=True)
class CompiledGraph:
    """One graph the backend built: its operators, kernels (``tuned``: from records) and build."""

    index: int
    operators: int
    inputs: int
    weights: int
    kernels: int
    tuned: tuple[str, ...]
    build_s: float
    built: Built

    def describe(self) -> str:
        tuned = f", {len(self.tuned)} from tuned records" if self.tuned else ""
        return (
            f"graph {self.index}: {self.operators} operators -> {self.kernels} kernels{tuned}; "
            f"{self.inputs} input(s), {self.weights} weight(s) bound; built in {self.build_s:.1f} s"
        )


class TorchBackend:
    """A ``torch.compile`` backend; ``graphs`` lists what it built, one per captured graph.

    ``target``: where to build (default: the inputs' device, this CPU or ``cuda``);
    ``records``: a ``%mlc_tune`` result or work dir (or several) whose tuned kernels to use;
    ``params``: ``bound`` (weights are constants of the build) or ``inputs``.
    """

    def __init__(self, *, target: Any = None, records: Any = None, params: str = "bound") -> None:
        if params not in PARAMS:
            raise DeployError(f"unknown params {params!r}", hint="use bound or inputs")
        self.target = target
        self.records = work_dirs(records)
        self.params = params
        self.graphs: list[CompiledGraph] = []
        self.__name__ = "mlc_jupyter"  # Dynamo names a backend by it in its messages

    def __call__(self, gm: Any, example_inputs: list[Any], **kwargs: Any) -> Callable[..., Any]:
        options = kwargs.get("options") or {}
        if options:
            backend = TorchBackend(**{**self._options(), **options})
            compiled = backend(gm, example_inputs)
            self.graphs += backend.graphs
            return compiled
        return self._compile(gm, list(example_inputs))

    def _options(self) -> dict[str, Any]:
        return {"target": self.target, "records": list(self.records), "params": self.params}

    def _compile(self, gm: Any, example_inputs: list[Any]) -> Callable[..., Any]:
        start = time.perf_counter()
        nodes = [n for n in gm.graph.nodes if n.op == "placeholder"]
        values = [
            _real_value(node, value) for node, value in zip(nodes, example_inputs, strict=True)
        ]
        _refuse_symbolic(nodes, values)
        bound = {
            i
            for i, node in enumerate(nodes)
            if self.params == "bound" and _is_weight(node) and isinstance(values[i], torch.Tensor)
        }
        mod = _relax_of(gm, values)
        if bound:
            weights = {i: values[i].detach().cpu().numpy() for i in sorted(bound)}
            mod = bind_inputs(mod, weights)
        device = next((v.device for v in values if isinstance(v, torch.Tensor)), None)
        target = resolve_target(
            self.target or ("cuda" if device and device.type == "cuda" else None)
        )
        built, kernels, tuned = self._build(mod, target)
        sig = prepare(built, "main")
        main = runtime_function(built, sig.name)
        keep = [i for i in range(len(nodes)) if i not in bound]
        self.graphs.append(
            CompiledGraph(
                len(self.graphs), _operators(gm), len(keep), len(bound), kernels, tuned,
                time.perf_counter() - start, built,
            )
        )  # fmt: skip

        def run(*args: Any) -> tuple[Any, ...]:
            out = as_torch(main(*(shareable(args[i]) for i in keep)))
            return out if isinstance(out, tuple) else (out,)

        return run

    def _build(self, mod: Any, target: Any) -> tuple[Built, int, tuple[str, ...]]:
        if not has_operators(mod):
            return build_module(mod, target), 0, ()
        prepared = prepare_model(mod, target)
        kernels = len(prepared.scheduled) + len(prepared.unscheduled)
        if not self.records:
            return build_module(mod, target), kernels, ()
        with_records = apply_records(prepared, self.records, target)
        return build_module(with_records.mod, target), kernels, with_records.tuned


def mlc_jupyter_backend(gm: Any, example_inputs: list[Any], **kwargs: Any) -> Callable[..., Any]:
    """The backend ``torch.compile(model, backend="mlc_jupyter", options={...})`` names (the
    package's ``torch_dynamo_backends`` entry point); ``options`` as :class:`TorchBackend`."""
    return TorchBackend(**(kwargs.get("options") or {}))(gm, example_inputs)


def _relax_of(gm: Any, values: list[Any]) -> Any:
    """The graph as Relax, through ``torch.export`` and TVM's importer of exported programs
    (the ``%mlc_import`` path: ATen operators, so kernels match a tuned import's)."""
    try:
        program = torch.export.export(gm, tuple(values))
    except Exception as err:  # noqa: BLE001 - torch.export raises many types, long text
        raise DeployError(
            f"torch.export could not capture a graph Dynamo gave: {error_reason(err)}"
        ) from None
    return translate_graph(
        program.graph,
        lambda: torch_frontend().from_exported_program(program, unwrap_unit_return_tuple=False),
    )


def _real_value(node: Any, value: Any) -> Any:
    """The real tensor behind an example input (Dynamo may give fake tensors)."""
    if type(value).__name__ == "FakeTensor":
        arg = node.meta.get("grapharg")
        real = getattr(arg, "example", None) if arg is not None else None
        return real if real is not None else value
    return value


def _is_weight(node: Any) -> bool:
    """True for a graph input that is a module's parameter or buffer (Dynamo's source says)."""
    arg = node.meta.get("grapharg")
    source = getattr(getattr(arg, "source", None), "name", "")
    source = source() if callable(source) else str(source)
    return "._parameters[" in source or "._buffers[" in source


def _refuse_symbolic(nodes: list[Any], values: list[Any]) -> None:
    for node, value in zip(nodes, values, strict=False):
        example = node.meta.get("example_value", value)
        shape = getattr(example, "shape", ())
        if not isinstance(value, torch.Tensor) or any(not isinstance(d, int) for d in shape):
            raise DeployError(  # Dynamo shows only the message: the advice is in it
                f"Dynamo made this graph's shapes dynamic (input {node.name}: "
                f"{type(value).__name__}); the mlc_jupyter backend builds fixed shapes: pass "
                "dynamic=False to torch.compile (one build per shape)"
            )


def _operators(gm: Any) -> int:
    return sum(1 for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module"))
