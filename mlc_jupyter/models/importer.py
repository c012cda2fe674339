"""A PyTorch model into a Relax module: ``torch.export`` or the book's ``fx.symbolic_trace``.

``torch.export`` + TVM's ``from_exported_program`` is the default path; ``via="fx"`` is the MLC
book's (chapter 5): ``fx.symbolic_trace`` + ``from_fx``. An operator TVM cannot translate is
reported by name with the line of the model that uses it (both paths record stack traces),
instead of TVM's assertion and a long traceback.
"""

from __future__ import annotations

import re
import time
import warnings
from collections.abc import Callable
from typing import Any

from ..errors import ModelImportError
from ..results import ImportedModel
from ..tvm_compat import detach_params, torch_frontend
from .summary import summarize

VIAS = ("export", "fx")
#: A deprecation PyTorch 2.13 warns about inside its own decompositions, which TVM's importer of
#: exported programs runs: not the user's code, so not the user's business.
TREESPEC_WARNING = r"`isinstance\(treespec, LeafSpec\)` is deprecated"
PARAMS = ("bound", "inputs")
Progress = Callable[[str, int, int], None]

#: The file names IPython and ipykernel give a cell's code.
_NOTEBOOK_CELL = re.compile(r"(ipykernel_\d+/\d+\.py|<ipython-input-[\d-]+\w*>)$")
_UNSUPPORTED = re.compile(r"Unsupported (?:function types?|function target|module type)\s*(.+)")


def _torch() -> Any:
    try:
        import torch  # deferred: optional (a clear error without it), and slow to import
    except ImportError:
        raise ModelImportError(
            "PyTorch is not installed", hint="pip install torch (the CPU build is enough)"
        ) from None
    return torch


def as_inputs(value: Any) -> tuple[Any, ...]:
    """The model's example inputs as a tuple of PyTorch tensors (NumPy arrays are converted)."""
    torch = _torch()
    values = value if isinstance(value, tuple | list) else (value,)
    out = []
    for item in values:
        if isinstance(item, torch.Tensor):
            out.append(item.detach())
        else:
            try:
                out.append(torch.as_tensor(item))
            except Exception:  # noqa: BLE001 - say which input is not a tensor
                raise ModelImportError(
                    f"input {len(out)} is a {type(item).__name__}, not a tensor",
                    hint="--inputs takes a tensor or a tuple of tensors, e.g. torch.randn(1, 784)",
                ) from None
    return tuple(out)


def import_model(
    model: Any,
    inputs: Any,
    *,
    via: str = "export",
    params: str = "bound",
    on_progress: Progress | None = None,
) -> ImportedModel:
    """Import ``model`` (a ``torch.nn.Module``) called on ``inputs`` into Relax.

    ``params="bound"`` makes the weights constants of the module (``main`` takes the inputs
    only); ``params="inputs"`` keeps them as parameters of ``main`` after the inputs, as the book's
    MLP does. Raises ``ModelImportError`` naming an operator TVM lacks and the model line using it.
    """
    torch = _torch()
    if via not in VIAS:
        raise ModelImportError(f"unknown import path {via!r}", hint="use export or fx")
    if params not in PARAMS:
        raise ModelImportError(f"unknown --params {params!r}", hint="use bound or inputs")
    if not isinstance(model, torch.nn.Module):
        raise ModelImportError(
            f"expected a torch.nn.Module, got {type(model).__name__}",
            hint="%mlc_import takes a PyTorch model; %%relax takes TVMScript",
        )
    args = as_inputs(inputs)
    cautions = []
    if model.training:
        cautions.append(
            "the model is in training mode (batch norm and dropout train); call model.eval() "
            "to import it for inference"
        )
    report = on_progress or (lambda stage, done, total: None)
    capture = "torch.export" if via == "export" else "fx.symbolic_trace"
    start = time.perf_counter()
    keep = params == "inputs"
    with torch.no_grad():
        report(capture, 0, 0)
        graph = _export(torch, model, args) if via == "export" else _trace(torch, model)
        captured = time.perf_counter()
        report("translating to Relax", 0, 0)
        if via == "export":
            mod = translate_graph(
                graph.graph,
                lambda: torch_frontend().from_exported_program(
                    graph, keep_params_as_input=keep, unwrap_unit_return_tuple=True
                ),
            )
        else:
            info = [(tuple(a.shape), str(a.dtype).replace("torch.", "")) for a in args]
            mod = translate_graph(
                graph.graph,
                lambda: torch_frontend().from_fx(
                    graph, info, keep_params_as_input=keep, unwrap_unit_return_tuple=True
                ),
                graph,
            )
    translated = time.perf_counter()
    stages = ((capture, captured - start), ("translate", translated - captured))
    weights: list[Any] = []
    if keep:
        mod, weights = detach_params(mod)
    example = tuple(a.numpy() for a in args) + tuple(w.numpy() for w in weights)
    summary = summarize(mod, len(args), on_progress=report)
    return ImportedModel(
        mod=mod,
        model=model,
        example_args=example,
        summary=summary,
        via=via,
        params=params,
        import_s=time.perf_counter() - start,
        stages=(*stages, ("kernels", time.perf_counter() - translated)),
        warnings=tuple(cautions),
    )


def _first_line(err: BaseException) -> str:
    lines = [ln.strip() for ln in str(err).strip().splitlines() if ln.strip()]
    return lines[0][:300] if lines else type(err).__name__


def _export(torch: Any, model: Any, args: tuple[Any, ...]) -> Any:
    try:
        return torch.export.export(model, args)
    except Exception as err:  # noqa: BLE001 - torch.export raises many types, with long text
        raise ModelImportError(
            f"torch.export could not capture the model: {type(err).__name__}: {_first_line(err)}",
            hint="fix the model line torch names, or try the book's path: --via fx",
        ) from None


def _trace(torch: Any, model: Any) -> Any:
    tracer = torch.fx.Tracer()
    tracer.record_stack_traces = True
    try:
        graph = tracer.trace(model)
    except Exception as err:  # noqa: BLE001 - symbolic tracing fails on data-dependent code
        raise ModelImportError(
            f"fx.symbolic_trace could not trace the model: {type(err).__name__}: "
            f"{_first_line(err)}",
            hint="torch.export handles more Python: --via export",
        ) from None
    return torch.fx.GraphModule(model, graph)


def translate_graph(graph: Any, translate: Callable[[], Any], module: Any = None) -> Any:
    """``translate()`` (a TVM importer); an operator it lacks is named with the model line."""
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", TREESPEC_WARNING, FutureWarning)
            return translate()
    except Exception as err:  # noqa: BLE001 - TVM asserts; turn it into a located message
        text = str(err).strip()
        match = _UNSUPPORTED.search(text)
        if match is None:
            raise ModelImportError(
                f"TVM could not translate the model: {type(err).__name__}: {_first_line(err)}"
            ) from None
        names = re.findall(r"[\w.]+", match.group(1).replace("class", ""))
        names = [n for n in names if n not in ("torch", "nn")]
        raise unsupported_error(graph, names, module) from None


def _node_name(node: Any, module: Any) -> str:
    """The name TVM's translators look an fx node up by."""
    if node.op == "call_module" and module is not None:
        return type(module.get_submodule(node.target)).__name__
    target = node.target
    return target if isinstance(target, str) else getattr(target, "__name__", str(target))


def _user_frame(stack: str) -> tuple[str, str]:
    """The last frame of a recorded stack outside PyTorch's own files: ``(where, code)``."""
    frames = re.findall(r'File "([^"]+)", line (\d+), in (\S+)\n\s*(.*)', stack or "")
    mine = [f for f in frames if "/torch/" not in f[0]] or frames
    if not mine:
        return "", ""
    path, line, func, code = mine[-1]
    if _NOTEBOOK_CELL.search(path):
        return f"cell line {line} in {func}", code.strip()
    return f"{path.rsplit('/', 1)[-1]}:{line} in {func}", code.strip()


def unsupported_error(graph: Any, names: list[str], module: Any = None) -> ModelImportError:
    """A short error naming each operator TVM lacks and the model line that uses it."""
    lines = []
    for name in names:
        short = name.rsplit(".", 1)[-1] if "." in name and not name.endswith("default") else name
        where = ""
        for node in graph.nodes:
            if node.op in ("placeholder", "output", "get_attr"):
                continue
            node_name = _node_name(node, module)
            if node_name in (name, short) or node_name.endswith(f".{short}"):
                place, code = _user_frame(node.meta.get("stack_trace") or "")
                owner = _owner(node)
                where = f" at {place}" if place else ""
                where += f" ({owner})" if owner else ""
                where += f": {code}" if code else ""
                break
        lines.append(f"{name}{where}")
    plural = "s" if len(lines) > 1 else ""
    return ModelImportError(
        f"TVM cannot translate operator{plural} " + "; ".join(lines),
        hint="rewrite that line with operators TVM supports, or give the translator a "
        "custom_convert_map (tvm.relax.frontend.torch)",
    )


def _owner(node: Any) -> str:
    """The submodule a node belongs to (``layer1.0.conv1: Conv2d``), from torch.export's stack."""
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return ""
    path, kind = list(stack.values())[-1]
    kind = str(kind).rsplit(".", 1)[-1]
    return f"{path}: {kind}" if path else kind
