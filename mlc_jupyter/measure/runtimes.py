"""The runtimes people deploy a PyTorch model with on a CPU, as rows of a race.

ONNX Runtime (the model exported with ``torch.onnx.export(..., dynamo=True)``, every graph
optimisation on), OpenVINO (``openvino.convert_model``, f32 precision, latency hint) and
``torch.compile`` with inductor's freezing (weights folded in as constants: PyTorch's advice for
CPU inference). Both runtimes run on the TVM build's thread count. They are optional packages
(the ``bench`` extra): a runtime whose packages are missing gets a row that names them and the
``pip`` line that installs them, and one that fails on a model gets a row that says why, as the
``torch.compile`` row does.
"""

from __future__ import annotations

import contextlib
import io
import logging
import re
import time
import warnings
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .race import Contender, callable_contender
from .reference import torch_inputs

#: The runtimes ``--runtimes`` adds, in row order, with the packages each needs.
RUNTIME_PACKAGES: dict[str, tuple[str, ...]] = {
    "freezing": (),
    "onnxruntime": ("onnxruntime", "onnx", "onnxscript"),  # torch.onnx's dynamo exporter
    "openvino": ("openvino",),
}

#: Each model's prepared runtimes, by runtime, input shapes and threads: exporting and
#: converting take seconds, so only a model's first race pays for them.
_PREPARED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class Prepared:
    """A runtime ready to run a model, or why it cannot.

    ``call`` takes the model's inputs (PyTorch tensors when ``tensors``, else NumPy arrays) and
    returns its outputs; ``seconds`` is what exporting and compiling took.
    """

    call: Callable[..., Any] | None
    tensors: bool = False
    error: str | None = None
    seconds: float = 0.0


def missing_packages(runtime: str) -> list[str]:
    """The packages ``runtime`` needs that this environment cannot import."""
    missing = []
    for package in RUNTIME_PACKAGES[runtime]:
        try:
            _IMPORTS[package]()
        except ImportError:
            missing.append(package)
    return missing


# deferred: optional packages (the bench extra), slow to import; one function per package, so
# the check of what is installed and the use import them the same way


def _onnxruntime_module() -> Any:
    import onnxruntime  # deferred: optional (see above)

    return onnxruntime


def _onnx_module() -> Any:
    import onnx  # deferred: optional (see above)

    return onnx


def _onnxscript_module() -> Any:
    import onnxscript  # deferred: optional (see above)

    return onnxscript


def _openvino_module() -> Any:
    import openvino  # deferred: optional (see above)

    return openvino


_IMPORTS: dict[str, Callable[[], Any]] = {
    "onnxruntime": _onnxruntime_module,
    "onnx": _onnx_module,
    "onnxscript": _onnxscript_module,
    "openvino": _openvino_module,
}


def runtime_contenders(
    model: Any, inputs: list[Any], name: str, threads: int, left_out: str | None = None
) -> list[Contender]:
    """Rows for ``model`` under inductor freezing, ONNX Runtime and OpenVINO on ``inputs``.

    ONNX Runtime and OpenVINO run on ``threads`` threads (the TVM variants'); ``torch.compile``
    on PyTorch's own. A runtime that is not installed or fails on the model is a row that says
    why, and the others still race; ``left_out`` makes every row say that instead of running.
    """
    kinds = {runtime: "torch" if runtime == "freezing" else runtime for runtime in RUNTIME_PACKAGES}
    labels = {
        runtime: f"torch.compile+freezing({name})"
        if runtime == "freezing"
        else f"{runtime}({name})"
        for runtime in RUNTIME_PACKAGES
    }
    if left_out:
        return [Contender(labels[r], kinds[r], error=left_out, device="") for r in RUNTIME_PACKAGES]
    tensors = torch_inputs(model, inputs)
    arrays = [t.numpy() for t in tensors]
    rows = []
    for runtime, label in labels.items():
        missing = missing_packages(runtime)
        if missing:
            install = " ".join(RUNTIME_PACKAGES[runtime])
            error = f"not installed ({', '.join(missing)} missing): pip install {install}"
            rows.append(Contender(label, kinds[runtime], error=error))
            continue
        prepared, fresh = _prepared(model, runtime, tensors, threads)
        if prepared.call is None:
            rows.append(Contender(label, kinds[runtime], error=prepared.error))
            continue
        args = tensors if prepared.tensors else arrays
        row = callable_contender(label, prepared.call, args, kinds[runtime])
        if fresh:
            row.notes.append(f"{label}: prepared in {prepared.seconds:.1f} s")
        rows.append(row)
    return rows


def _prepared(model: Any, runtime: str, tensors: list[Any], threads: int) -> tuple[Prepared, bool]:
    """``runtime`` made ready for ``model`` once per input shapes and thread count, and whether
    it was made now (a failure is kept too: exporting again would fail again)."""
    key = (runtime, tuple((tuple(t.shape), str(t.dtype)) for t in tensors), threads)
    cache = _PREPARED.setdefault(model, {})
    if key in cache:
        return cache[key], False
    start = time.perf_counter()
    try:
        call, takes_tensors = _PREPARE[runtime](model, tensors, threads)
        cache[key] = Prepared(call, takes_tensors, seconds=time.perf_counter() - start)
    except Exception as err:  # noqa: BLE001 - the row says why this runtime cannot run it
        cache[key] = Prepared(None, error=_reason(runtime, err))
    return cache[key], True


def _reason(runtime: str, err: BaseException) -> str:
    """``ONNX Runtime failed: <the error's first line> (<its cause's first line>)``: exporters
    wrap the reason (torch.export's, say) in a message about their own steps."""
    what = {"freezing": "torch.compile", "onnxruntime": "ONNX Runtime", "openvino": "OpenVINO"}
    reason = _first_line(err).split(" This is step")[0]  # torch.onnx's advice follows
    if err.__cause__ is not None:
        reason += f" ({type(err.__cause__).__name__}: {_first_line(err.__cause__)})"
    return f"{what[runtime]} failed: {reason[:400]}"


def _first_line(err: BaseException) -> str:
    """The first non-empty line of ``err``'s message, without terminal colour codes."""
    text = _ANSI.sub("", str(err))
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), type(err).__name__)


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _freezing(model: Any, tensors: list[Any], threads: int) -> tuple[Callable[..., Any], bool]:
    """``torch.compile(model, options={"freezing": True})``, compiled by a first call."""
    import torch  # deferred: optional, and slow to import

    frozen = torch.compile(model, options={"freezing": True})

    def call(*xs: Any) -> Any:
        with torch.no_grad():  # freezing applies to inference only
            return frozen(*xs)

    call(*tensors)
    return call, True


def _onnxruntime(model: Any, tensors: list[Any], threads: int) -> tuple[Callable[..., Any], bool]:
    """An ONNX Runtime session of the model exported by torch.onnx's dynamo exporter."""
    import torch  # deferred: optional, and slow to import

    onnxruntime = _onnxruntime_module()

    with _quiet_exporter(), torch.no_grad():
        program = torch.onnx.export(model, tuple(tensors), dynamo=True, verbose=False)
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = onnxruntime.InferenceSession(
        program.model_proto.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    names = [i.name for i in session.get_inputs()]
    return (lambda *xs: session.run(None, dict(zip(names, xs, strict=True)))), False


def _openvino(model: Any, tensors: list[Any], threads: int) -> tuple[Callable[..., Any], bool]:
    """An OpenVINO infer request of the model converted from PyTorch (traced under no_grad, as
    it runs: an ``nn.TransformerEncoderLayer`` takes its fast path only then)."""
    import torch  # deferred: optional, and slow to import

    openvino = _openvino_module()

    with _quiet_exporter(), torch.no_grad():
        converted = openvino.convert_model(model, example_input=tuple(tensors))
    config = {
        "PERFORMANCE_HINT": "LATENCY",
        "INFERENCE_PRECISION_HINT": "f32",
        "INFERENCE_NUM_THREADS": threads,
    }
    compiled = openvino.Core().compile_model(converted, "CPU", config)
    request = compiled.create_infer_request()

    return (lambda *xs: request.infer(list(xs), share_inputs=True).to_tuple()), False


_PREPARE = {"freezing": _freezing, "onnxruntime": _onnxruntime, "openvino": _openvino}


@contextlib.contextmanager
def _quiet_exporter() -> Iterator[None]:
    """Exporters' chatter (torch.onnx's log lines, tracer warnings) kept out of the output;
    an error still raises with its message."""
    logger = logging.getLogger("torch.onnx")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logger.setLevel(level)
