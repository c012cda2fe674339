"""A ``torch.compile`` backend that builds each captured graph the way ``%mlc_build`` does.

TorchDynamo hands a backend one FX graph per region it captured (a graph break makes several)
with example inputs. Each graph is translated with TVM's FX importer, its operators legalised,
fused and given default schedules, the kernels a tuning run measured replaced by their tuned
schedules (``records=``), and built; the compiled function passes PyTorch tensors through
DLPack. Weights (the module's parameters and buffers, which Dynamo passes as graph inputs) are
bound into the build by default (``params="bound"``, as ``%mlc_import`` does): constants fold,
and a model's tuned kernels match. Like Inductor's freezing, a weight changed afterwards is not
seen until ``torch._dynamo.reset()``; ``params="inputs"`` passes them at every call instead.
Builds are for fixed shapes (default schedules and tuned records are): a graph Dynamo makes
dynamic is built once per shape it is called with.

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
from .torch_tensors import as_eager_returns, as_torch, shareable
from .tuned_records import apply_records, work_dirs

PARAMS = ("bound", "inputs")


@dataclass(frozen=True)
class CompiledGraph:
    """One graph the backend built: its operators, kernels (``tuned``: from records) and build.
    ``with_records``: the backend was given records (so a graph none of whose kernels they hold
    says so, rather than look like a build without records)."""

    index: int
    operators: int
    inputs: int
    weights: int
    kernels: int
    tuned: tuple[str, ...]
    build_s: float
    built: Built
    #: the shape of each input it was built for
    shapes: tuple[tuple[int, ...], ...] = ()
    with_records: bool = False

    def describe(self) -> str:
        tuned = ""
        if self.tuned:
            tuned = f", {len(self.tuned)} from tuned records"
        elif self.with_records and self.kernels:
            tuned = ", none in the tuned records (default schedules)"
        shapes = ", ".join("x".join(map(str, s)) or "scalar" for s in self.shapes)
        return (
            f"graph {self.index}: {self.operators} operators -> {self.kernels} kernels{tuned}; "
            f"{self.inputs} input(s) ({shapes}), {self.weights} weight(s) bound; "
            f"built in {self.build_s:.1f} s"
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
        nodes = [n for n in gm.graph.nodes if n.op == "placeholder"]
        values = [
            _real_value(node, value) for node, value in zip(nodes, example_inputs, strict=True)
        ]
        if not any(isinstance(value, torch.Tensor) for value in values):
            return gm.forward  # arithmetic on sizes only: nothing for TVM to build
        weights = [_is_weight(node) for node in nodes]  # Dynamo drops what tells once built
        if _is_symbolic(nodes, values):
            return self._per_shape(gm, weights)
        return self._fixed(gm, weights, values)

    def _per_shape(self, gm: Any, weights: list[bool]) -> Callable[..., Any]:
        """A graph whose shapes Dynamo made symbolic, built for each shape it is called with
        (when first called with it), as ``dynamic=False`` would build it: TVM's default
        schedules and tuned records are for fixed shapes."""
        builds: dict[tuple[Any, ...], Callable[..., Any]] = {}

        def run(*args: Any) -> tuple[Any, ...]:
            key = _shape_key(args)
            if key not in builds:
                builds[key] = self._fixed(gm, weights, list(args))
            return builds[key](*args)

        return run

    def _fixed(self, gm: Any, weights: list[bool], values: list[Any]) -> Callable[..., Any]:
        """``gm`` built for the shapes of ``values`` (its integer inputs written in);
        ``weights`` marks the inputs that are the module's parameters and buffers."""
        start = time.perf_counter()
        tensors = [i for i, value in enumerate(values) if isinstance(value, torch.Tensor)]
        bound = [i for i in tensors if self.params == "bound" and weights[i]]
        mod = _relax_of(gm, values)  # its parameters: the tensor inputs, in order
        if bound:
            constants = {tensors.index(i): values[i].detach().cpu().numpy() for i in bound}
            mod = bind_inputs(mod, constants)
        device = next((v.device for v in values if isinstance(v, torch.Tensor)), None)
        target = resolve_target(
            self.target or ("cuda" if device and device.type == "cuda" else None)
        )
        built, kernels, tuned = self._build(mod, target)
        sig = prepare(built, "main")
        main = runtime_function(built, sig.name)
        keep = [i for i in tensors if i not in bound]
        self.graphs.append(
            CompiledGraph(
                len(self.graphs), _operators(gm), len(keep), len(bound), kernels, tuned,
                time.perf_counter() - start, built, _shapes(values, keep), bool(self.records),
            )
        )  # fmt: skip

        refusal = (
            f"graph {len(self.graphs) - 1} was built by the mlc_jupyter backend, which builds "
            "for inference: no gradient flows through it (its weights are constants of the "
            "build); train with torch.compile's default backend, and run this one under "
            "torch.no_grad()"
        )

        def run(*args: Any) -> tuple[Any, ...]:
            out = as_torch(main(*(shareable(args[i]) for i in keep)))
            return as_eager_returns(out if isinstance(out, tuple) else (out,), args, refusal)

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
    tensors = tuple(v for v in values if isinstance(v, torch.Tensor))
    module = gm if len(tensors) == len(values) else _SizesWrittenIn(gm, values)
    try:
        program = torch.export.export(module, tensors)
    except Exception as err:  # noqa: BLE001 - torch.export raises many types, long text
        raise DeployError(
            f"torch.export could not capture a graph Dynamo gave: {error_reason(err)}"
        ) from None
    return translate_graph(
        program.graph,
        lambda: torch_frontend().from_exported_program(program, unwrap_unit_return_tuple=False),
    )


class _SizesWrittenIn(torch.nn.Module):
    """A graph with its inputs that are not tensors (the sizes Dynamo passes for dynamic
    shapes) written in: ``torch.export`` then sees tensor inputs only, the ones TVM's importer
    takes."""

    def __init__(self, gm: Any, values: list[Any]) -> None:
        super().__init__()
        self.gm = gm
        self.sizes = {i: v for i, v in enumerate(values) if not isinstance(v, torch.Tensor)}
        self.count = len(values)

    def forward(self, *tensors: Any) -> Any:
        given = iter(tensors)
        return self.gm(
            *(self.sizes[i] if i in self.sizes else next(given) for i in range(self.count))
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


def _is_symbolic(nodes: list[Any], values: list[Any]) -> bool:
    """Whether Dynamo made the graph's shapes dynamic (a size input, or a symbolic dimension)."""
    for node, value in zip(nodes, values, strict=False):
        if not isinstance(value, torch.Tensor):
            return True
        shape = getattr(node.meta.get("example_value", value), "shape", ())
        if any(not isinstance(d, int) for d in shape):
            return True
    return False


def _shape_key(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """What a build for fixed shapes depends on: each tensor's shape, dtype and device, and the
    value of each other input (a size)."""
    return tuple(
        (tuple(a.shape), a.dtype, a.device) if isinstance(a, torch.Tensor) else a for a in args
    )


def _shapes(values: list[Any], keep: list[int]) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(values[i].shape) for i in keep)


def _operators(gm: Any) -> int:
    return sum(1 for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module"))
