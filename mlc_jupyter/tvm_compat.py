"""The one module that knows TVM 0.27's names.

TVM renamed much of the course's API within a year (``tir`` -> ``tirx`` and ``s_tir``,
``tvm.nd`` -> ``tvm.runtime.tensor``, ``tvm.build`` -> ``tvm.compile``, string targets -> dicts).
Every other module asks this one for those names, so the next rename touches one file.
TVM is imported lazily: importing this module costs nothing.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.util
import os
import shutil
import sys
from collections.abc import Iterator
from types import ModuleType, SimpleNamespace
from typing import Any


@functools.cache
def use_all_cores() -> None:
    """Let TVM's CPU kernels use every core unless the user set ``TVM_NUM_THREADS``.

    TVM sizes each thread's pool when the thread first runs a kernel, from ``TVM_NUM_THREADS`` or
    else half the logical CPUs (it assumes hyper-threading), and reads the variable again when it
    launches parallel work. On a 2-core machine without it, every kernel runs on ONE thread while
    the host target says ``num-cores=2``: tuned kernels time at half speed. Called before TVM is
    imported and by ``%load_ext``; it must stay set.
    """
    os.environ.setdefault("TVM_NUM_THREADS", str(os.cpu_count() or 1))


def tvm() -> ModuleType:
    """Import and return the ``tvm`` package (about 3 s the first time)."""
    use_all_cores()
    import tvm as _tvm

    return _tvm


@functools.cache
def script_namespaces() -> dict[str, Any]:
    """The names a TVMScript cell sees without imports: ``T``, ``I``, ``R``, ``tvm``."""
    _tvm = tvm()
    from tvm.script import ir as I  # noqa: N812
    from tvm.script import relax as R  # noqa: N812
    from tvm.script import tirx as T  # noqa: N812

    return {"T": T, "I": I, "R": R, "tvm": _tvm, "relax": _tvm.relax}


def schedule_namespace() -> dict[str, Any]:
    """The names schedule code sees without imports: the script names and the schedule package."""
    return {**script_namespaces(), "s_tir": s_tir()}


def tirx() -> ModuleType:
    """The TIR expression/statement namespace (``tvm.tir`` in the course)."""
    return tvm().tirx


def tir() -> ModuleType:
    """The TIR namespace under the course's name: expressions, statements, ``IndexMap``."""
    return tirx()


def s_tir() -> ModuleType:
    """The scheduled-TIR namespace (``Schedule``, ``SBlock`` ...)."""
    import tvm.s_tir as _s_tir

    return _s_tir


def metaschedule() -> ModuleType:
    """MetaSchedule (``tvm.meta_schedule`` in the course), TVM's tuning framework."""
    tvm()
    from tvm.s_tir import meta_schedule as ms

    return ms


#: The PrimFunc attribute that promises LLVM its buffers do not alias (``"tir.noalias"`` before).
NOALIAS_ATTR = "tirx.noalias"
#: The attribute MetaSchedule sets on a kernel that is already scheduled (nothing to tune).
IS_SCHEDULED_ATTR = "tirx.is_scheduled"

#: The logger MetaSchedule writes its console and task logs under.
METASCHEDULE_LOGGER = "tvm.s_tir.meta_schedule"


def import_tensor_intrinsics(submodules: tuple[str, ...], *, whole: bool = False) -> None:
    """Register TensorIR's tensor intrinsics of ``submodules`` (``"x86"``, ``"cuda"`` ...) with
    TVM's package set up without running its ``__init__`` (which imports every backend's), or,
    ``whole``, the package's first import runs its ``__init__``.
    """
    tvm()
    name = "tvm.s_tir.tensor_intrin"
    if name not in sys.modules:
        spec = importlib.util.find_spec(name)
        if spec is None:
            return
        if whole:
            importlib.import_module(name)
            return
        sys.modules[name] = importlib.util.module_from_spec(spec)  # without its __init__
    for sub in submodules:
        importlib.import_module(f"{name}.{sub}")


def derived_object(cls: type) -> type:
    """TVM's decorator that makes a Python subclass of a TVM object class (``Py*`` classes)."""
    tvm()
    from tvm.ir.utils import derived_object as _derived

    return _derived(cls)


def metaschedule_task_loggers(work_dir: str, task_names: list[str]) -> list[Any]:
    """One logger per tuning task, writing to ``<work_dir>/logs`` as MetaSchedule's own do."""
    from tvm.s_tir.meta_schedule.logging import get_loggers_from_work_dir

    return get_loggers_from_work_dir(work_dir, task_names)


def fork_seed(seed: int | None, n: int) -> list[int]:
    """``n`` random states for ``n`` tuning tasks derived from one ``seed``."""
    from tvm.s_tir.meta_schedule.utils import fork_seed as _fork

    return _fork(seed, n=n)


def remove_weight_layout_rewrite(mod: Any) -> Any:
    """Drop the layout-rewrite blocks a tuned candidate carries, so it builds on its own."""
    from tvm.s_tir.transform import RemoveWeightLayoutRewriteBlock

    return RemoveWeightLayoutRewriteBlock(skip_tensor_rewrite=True)(mod)


def estimate_tir_flops(mod: Any) -> float:
    """TVM's FLOP estimate of a TensorIR module (raises for what it cannot count)."""
    return float(s_tir().analysis.estimate_tir_flops(mod))


def config_thread_pool(cores: int) -> None:
    """Resize the calling thread's TVM pool to ``cores`` workers."""
    tvm().get_global_func("runtime.config_threadpool")(0, cores)


def Schedule(mod: Any, **kwargs: Any) -> Any:  # noqa: N802 - mirrors the TVM class name
    """Create a TensorIR schedule (``tvm.tir.Schedule`` in the course)."""
    return s_tir().Schedule(mod, **kwargs)


def buffer_load(expr: Any) -> tuple[Any, list[Any]] | None:
    """``(buffer, indices)`` of a buffer load, else ``None``.

    The course's ``tir.BufferLoad`` (``.buffer``) is an ``ir.TensorLoad`` with ``.source`` in 0.27.
    """
    if isinstance(expr, tvm().ir.TensorLoad):
        return expr.source, list(expr.indices)
    return None


def param_buffers(func: Any) -> list[Any]:
    """The buffers a PrimFunc takes (its ``buffer_map`` values in the course; its params now)."""
    return list(func.params)


def var_dtype(var: Any) -> str:
    """The dtype of a scalar variable (``var.dtype`` in the course; its ``ty`` in 0.27)."""
    return str(var.ty)


def region_buffer(region: Any) -> Any:
    """The buffer of a block's read or write region (``.buffer`` in the course, ``.source`` now)."""
    return region.source


def IRModule() -> type:  # noqa: N802
    return tvm().IRModule


def PrimFunc() -> type:  # noqa: N802
    return tirx().PrimFunc


def relax_function_type() -> type:
    """The Relax function class (``relax.Function``)."""
    return tvm().relax.Function


def schedule_type() -> type:
    """The TensorIR schedule class (``tvm.tir.Schedule`` in the course)."""
    return s_tir().Schedule


def trace_type() -> type:
    """The class of a schedule's trace (``tvm.tir.schedule.Trace`` in the course)."""
    return s_tir().schedule.Trace


def make_trace(insts: Any, decisions: dict[Any, Any]) -> Any:
    """A trace of ``insts`` with the given sampling ``decisions``."""
    return trace_type()(insts, decisions)


def apply_json_trace(json_value: Any, sch: Any) -> None:
    """Replay a trace saved as JSON (``Trace.as_json()``) onto schedule ``sch``."""
    trace_type().apply_json_to_schedule(json_value, sch)


def block_rv_type() -> type:
    """The class of a schedule's block handle (``BlockRV`` in the course)."""
    return s_tir().schedule.SBlockRV


def loop_rv_type() -> type:
    """The class of a schedule's loop handle."""
    return s_tir().schedule.LoopRV


#: The schedule method that returns a block handle by name (``get_block`` in the course).
GET_BLOCK_METHOD = "get_sblock"
#: The trace instruction kind of that method.
GET_BLOCK_INSTRUCTION = "GetSBlock"
#: The TVMScript namespace that ``T`` stands for (``tir`` in the course).
TIR_SCRIPT_NAMESPACE = "tirx"
#: How a schedule error names an IR object in its message (``tirx.For#0``, ``s_tir.SBlock#1``,
#: ``tir.Block#2`` in older releases); the IR dump marks the object's line with ``# <ref>``.
SCHEDULE_ERROR_OBJECT_REF = r"\b((?:s_tir|tirx|tir)\.(?:SBlock|Block|For|Loop)\w*#\d+)"
#: The IR classes shown with highlighting, as ``(module, class name)`` (no TVM import needed).
IR_DISPLAY_TYPES = (
    ("tvm.ir.module", "IRModule"),
    ("tvm.tirx.function", "PrimFunc"),
    ("tvm.relax.expr", "Function"),
)


def get_block(sch: Any, name: str, func_name: str | None = None) -> Any:
    """The handle of block ``name`` in schedule ``sch`` (``sch.get_block`` in the course)."""
    method = getattr(sch, GET_BLOCK_METHOD)
    return method(name) if func_name is None else method(name, func_name=func_name)


def tir_nodes() -> SimpleNamespace:
    """TensorIR's node classes under version-neutral names, for walking a PrimFunc's body.

    ``For``, ``BlockRealize`` (``SBlockRealize`` in 0.27), ``Var``, ``IntImm``, ``Stmt``.
    """
    t, s = tirx(), s_tir()
    return SimpleNamespace(
        For=t.For, BlockRealize=s.SBlockRealize, Var=t.Var, IntImm=t.IntImm, Stmt=t.Stmt
    )


def compile(mod: Any, target: Any) -> Any:  # noqa: A001 - mirrors tvm.compile
    """Build a TIR or Relax module (``tvm.build`` / ``relax.build`` in the course)."""
    return tvm().compile(mod, target=target)


def tensor(array: Any, device: Any = None) -> Any:
    """A runtime tensor from a NumPy array (``tvm.nd.array`` in the course)."""
    return tvm().runtime.tensor(array, device=device)


def empty(shape: Any, dtype: str = "float32", device: Any = None) -> Any:
    """An uninitialised runtime tensor (``tvm.nd.empty`` in the course)."""
    return tvm().runtime.empty(shape, dtype=dtype, device=device)


def tensor_type() -> type:
    """The runtime tensor class (``tvm.nd.NDArray`` in the course)."""
    return tvm().runtime.Tensor


def structural_equal(a: Any, b: Any, map_free_vars: bool = False) -> bool:
    import tvm_ffi

    return bool(tvm_ffi.structural_equal(a, b, map_free_vars))


def assert_structural_equal(a: Any, b: Any) -> None:
    tvm().ir.assert_structural_equal(a, b)


def structural_hash(obj: Any) -> int:
    import tvm_ffi

    return int(tvm_ffi.structural_hash(obj))


def llvm_vector_width(target: Any) -> int:
    """The widest vector register of an LLVM target's CPU, in bits (0 when LLVM cannot tell)."""
    from tvm.target import codegen

    return int(codegen.llvm_get_vector_width(target))


def llvm_system_triple() -> str:
    """LLVM's triple of this machine (``x86_64-pc-linux-gnu``)."""
    from tvm.target import codegen

    return str(codegen.llvm_get_system_triple())


@functools.cache
def host_cpu() -> str:
    """The LLVM name of this machine's CPU (e.g. ``znver4``); TVM refuses ``"native"``."""
    return str(tvm().target.codegen.llvm_get_system_cpu())


def version() -> str:
    return str(tvm().__version__)


def is_tvm_object(obj: Any) -> bool:
    """True for TVM objects, without importing TVM when it is not loaded yet."""
    module = type(obj).__module__ or ""
    return module.split(".")[0] in {"tvm", "tvm_ffi"}


@contextlib.contextmanager
def metaschedule_outside_notebook() -> Iterator[None]:
    """Keep MetaSchedule from drawing its pandas tables and clearing the cell.

    In a Jupyter kernel MetaSchedule's C++ side asks ``s_tir.meta_schedule.using_ipython`` and, if
    true, prints tables with pandas (not a dependency; ``No module named 'pandas'``) and calls
    ``clear_output``. While this context is active it sees a plain process and logs as text.
    """
    from tvm_ffi import get_global_func, register_global_func

    name = "s_tir.meta_schedule.using_ipython"
    metaschedule()  # registers the original
    original = get_global_func(name, allow_missing=True)
    register_global_func(name, lambda: False, override=True)
    try:
        yield
    finally:
        if original is not None:
            register_global_func(name, original, override=True)


#: What TVM 0.27's CUDA module factory needs to compile a kernel when a GPU is present: the
#: ``tvm_callback_cuda_compile`` global registered by ``tvm.support.nvcc`` (``tvm.contrib.nvcc``
#: in the course), which uses NVRTC (the ``cuda-bindings`` package) unless this variable says nvcc.
CUDA_COMPILE_MODE_VAR = "TVM_CUDA_COMPILE_MODE"


def nvcc_compile(source: str, target: Any, fmt: str = "ptx") -> bytes:
    """CUDA C++ -> ``fmt`` (``ptx``/``cubin``/``fatbin``) with nvcc and TVM's own flags.

    Raises ``RuntimeError`` with the source, ``Compilation error:`` and nvcc's output.
    """
    from tvm.support import nvcc

    with target:  # TVM reads the architecture from the current target
        return bytes(nvcc.compile_cuda(source, target_format=fmt, compiler="nvcc"))


def prefer_nvcc_without_nvrtc() -> None:
    """Let TVM compile CUDA kernels with nvcc when NVRTC's Python bindings are not installed.

    TVM 0.27 compiles with NVRTC by default and fails on a GPU machine without ``cuda-bindings``
    although nvcc is there. A user's own ``TVM_CUDA_COMPILE_MODE`` is kept.
    """
    if CUDA_COMPILE_MODE_VAR in os.environ or not shutil.which("nvcc"):
        return
    try:
        has_nvrtc = importlib.util.find_spec("cuda.bindings") is not None
    except ModuleNotFoundError:
        has_nvrtc = False
    if not has_nvrtc:
        os.environ[CUDA_COMPILE_MODE_VAR] = "nvcc"


# -- graph passes (pass stepper, graph view) -----------------------------------------------------


def pass_type() -> type:
    """The base class of every module-level pass (``tvm.transform.Pass``)."""
    return tvm().transform.Pass


def is_expr_mutator(obj: Any) -> bool:
    """True for an instance of a ``@relax.expr_functor.mutator`` class (the book's rewriters)."""
    from tvm.relax.expr_functor import _PyExprMutator

    return isinstance(obj, _PyExprMutator)


def is_expr_mutator_class(obj: Any) -> bool:
    """True for a class decorated with ``@relax.expr_functor.mutator`` (not yet instantiated)."""
    from tvm.relax.expr_functor import _PyExprMutator

    return isinstance(obj, type) and issubclass(obj, _PyExprMutator)


def relax_pipeline_names() -> list[str]:
    """Named Relax pipelines: TVM's registered ones plus ``target`` (fusion for the target)."""
    from tvm.relax.pipeline import PIPELINE_MAP

    return [*sorted(n for n in PIPELINE_MAP if n != "static_shape_tuning"), "target"]


def relax_pipeline(name: str, target: Any) -> Any:
    """The pass of pipeline ``name``: ``default`` is what ``tvm.compile`` runs on a CPU (no
    fusion); ``target`` is ``relax.get_default_pipeline(target)`` (legalize, FuseOps, FuseTIR)."""
    relax = tvm().relax
    if name == "target":
        return relax.get_default_pipeline(target)
    return relax.get_pipeline(name)


def observe_passes(run: Any, on_before: Any, on_after: Any) -> Any:
    """Call ``run()`` in a PassContext whose instrument reports every pass (nested ones too).

    ``on_before(name)`` and ``on_after(name, mod)`` are called around each pass; returns what
    ``run`` returned. The context keeps the current opt level and config.
    """
    _tvm = tvm()

    @_tvm.instrument.pass_instrument
    class _Observer:
        def run_before_pass(self, _mod: Any, info: Any) -> None:
            on_before(str(info.name))

        def run_after_pass(self, mod: Any, info: Any) -> None:
            on_after(str(info.name), mod)

    current = _tvm.transform.PassContext.current()
    with _tvm.transform.PassContext(
        opt_level=current.opt_level, config=dict(current.config), instruments=[_Observer()]
    ):
        return run()


def relax_expr_kind(expr: Any) -> str:
    """What a Relax expression is, in one word: ``call``, ``const``, ``tuple``, ``item`` (a tuple
    element), ``var``, ``global`` (a GlobalVar), ``extern``, ``op`` or ``other``."""
    _tvm = tvm()
    relax, ir = _tvm.relax, _tvm.ir
    kinds = (
        (relax.Call, "call"), (ir.expr.Constant, "const"), (relax.Tuple, "tuple"),
        (relax.TupleGetItem, "item"), (relax.Var, "var"), (ir.GlobalVar, "global"),
        (relax.ExternFunc, "extern"), (ir.Op, "op"),
    )  # fmt: skip
    for cls, kind in kinds:
        if isinstance(expr, cls):
            return kind
    return "other"


def expr_type(expr: Any) -> Any:
    """The type a Relax expression carries (``struct_info`` in the course, ``ty`` in 0.27)."""
    return getattr(expr, "ty", None)


def tensor_shape_dtype(expr: Any) -> tuple[tuple[str, ...] | None, str | None]:
    """``((1, 784), "float32")`` for a tensor-typed expression, ``(None, None)`` otherwise."""
    ty = expr_type(expr)
    shape = getattr(ty, "shape", None)
    if ty is None or not hasattr(ty, "dtype"):
        return None, None

    def dim(d: Any) -> str:
        try:
            return str(int(d))
        except (TypeError, ValueError):  # a symbolic size such as n
            return str(d)

    dims = tuple(dim(d) for d in shape) if shape is not None else None
    return dims, str(ty.dtype)


def relax_bindings(func: Any) -> list[tuple[Any, Any]]:
    """``(var, value)`` of every binding in the top-level blocks of a Relax function."""
    body = func.body
    out = []
    for block in getattr(body, "blocks", ()):
        for binding in block.bindings:
            out.append((binding.var, binding.value))
    return out


def relax_function_result(func: Any) -> Any:
    """The expression a Relax function returns (the ``SeqExpr``'s body)."""
    return getattr(func.body, "body", func.body)


def var_name(var: Any) -> str:
    """A Relax variable's name (``name_hint`` in the course, ``name`` in 0.27)."""
    name = getattr(var, "name", None)
    return str(name if name is not None else var.name_hint)


def is_schedule(obj: Any) -> bool:
    """True for a TensorIR schedule (``sch``)."""
    return isinstance(obj, s_tir().Schedule)


# -- out-of-bounds accesses: TVM's static checker and run-time bound checks ---------------------


def check_out_of_bounds(mod: Any) -> str:
    """TVM's static out-of-bounds analysis of ``mod`` (``s_tir.analysis.OOBChecker``): ``""`` when
    it proves nothing, else its report, one ``Out of bounds memory access`` line per access.

    Rendering the report makes TVM's printer log C++ warnings on file descriptor 2, which a
    Jupyter kernel would show in the cell; they are dropped while the check runs.
    """
    checker = s_tir().analysis.OOBChecker()
    with _native_stderr_dropped():
        try:
            checker(mod)
        except Exception as err:  # noqa: BLE001 - the report is a ScheduleError's message
            return str(err) or type(err).__name__
    return ""


@contextlib.contextmanager
def _native_stderr_dropped() -> Iterator[None]:
    try:
        saved = os.dup(2)
    except OSError:  # no file descriptor 2 to borrow
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


#: Type keys of TIR buffer accesses: a store, and a load (``BufferLoad`` became ``TensorLoad``).
_STORE_KEY, _LOAD_KEY = "tirx.BufferStore", "ir.TensorLoad"


def node_fields(node: Any) -> Iterator[tuple[str, Any]]:
    """The reflected fields of a TVM object, base classes included.

    TVM 0.27 has no Python statement/expression visitor for TIR; reflection reaches every node.
    """
    info = getattr(type(node), "__tvm_ffi_type_info__", None)
    while info is not None:
        for field in info.fields:
            yield field.name, getattr(node, field.name)
        info = info.parent_type_info


def buffer_access(node: Any) -> tuple[Any, Any, bool] | None:
    """``(buffer, indices, is_store)`` when ``node`` stores to or loads from a buffer, else None."""
    info = getattr(type(node), "__tvm_ffi_type_info__", None)
    key = info.type_key if info is not None else ""
    if key == _STORE_KEY:
        return node.buffer, node.indices, True
    if key == _LOAD_KEY:
        return node.source, node.indices, False
    return None


def is_stmt(node: Any) -> bool:
    return isinstance(node, tirx().Stmt)


def ir_nodes(root: Any) -> Iterator[tuple[Any, Any]]:
    """Every node under ``root`` (a PrimFunc body or any TIR node) in source order, with its
    innermost enclosing statement, which carries the span."""
    stmt_type = tirx().Stmt
    skip = {"span", "ty", "buffer", "source", "dtype"}
    stack: list[tuple[Any, Any]] = [(root, root)]
    while stack:
        node, stmt = stack.pop()
        if isinstance(node, list | tuple) or type(node).__name__ in ("Array", "List"):
            stack.extend((item, stmt) for item in reversed(list(node)))
            continue
        if not hasattr(type(node), "__tvm_ffi_type_info__"):
            continue
        if isinstance(node, stmt_type):
            stmt = node
        yield node, stmt
        children = [child for name, child in node_fields(node) if name not in skip]
        stack.extend((child, stmt) for child in reversed(children))


def buffer_accesses(root: Any) -> Iterator[tuple[Any, Any, bool, Any]]:
    """Every ``(buffer, indices, is_store, statement)`` under ``root`` (see :func:`ir_nodes`)."""
    for node, stmt in ir_nodes(root):
        access = buffer_access(node)
        if access is not None:
            yield (*access, stmt)


def extern_calls(root: Any) -> Iterator[tuple[str, Any]]:
    """Every ``(symbol, statement)`` of a ``T.call_extern`` under ``root``."""
    for node, stmt in ir_nodes(root):
        op = getattr(node, "op", None)
        if getattr(op, "name", None) == "tirx.call_extern" and len(node.args):
            yield str(getattr(node.args[0], "value", node.args[0])), stmt


_STMT_CHILDREN = ("body", "seq", "then_case", "else_case", "block", "init")


def block_bindings(func: Any) -> Iterator[tuple[Any, Any, Any, Any, bool]]:
    """Every block iterator binding of a PrimFunc: ``(block, iter_var, value, analyzer,
    predicated)``; ``analyzer`` (``tvm.sym.Analyzer``, ``tvm.arith`` before 0.27) knows the ranges
    of the loops and block iterators around the block; ``predicated`` says a ``T.where`` guards it.
    """
    _tvm = tvm()
    analyzer = _tvm.sym.Analyzer()
    loop, realize, block_type = tirx().For, s_tir().SBlockRealize, s_tir().SBlock
    stack = [func.body]
    while stack:
        stmt = stack.pop()
        if isinstance(stmt, loop):
            extent = _tvm.ir.Range.from_min_extent(stmt.min, stmt.extent)
            analyzer.bind(stmt.loop_var, extent, allow_override=True)
        elif isinstance(stmt, realize):
            predicate = stmt.predicate
            predicated = not (isinstance(predicate, tirx().IntImm) and int(predicate) == 1)
            for iter_var, value in zip(stmt.block.iter_vars, stmt.iter_values, strict=False):
                yield stmt.block, iter_var, value, analyzer, predicated
            for iter_var in stmt.block.iter_vars:
                analyzer.bind(iter_var.var, iter_var.dom, allow_override=True)
        for field in _STMT_CHILDREN:
            child = getattr(stmt, field, None)
            for item in child if field == "seq" and child is not None else (child,):
                if isinstance(item, tirx().Stmt | block_type):
                    stack.append(item)


def guarded_in_bounds(func: Any, buffers: set[str]) -> list[tuple[Any, Any, tuple[bool, ...]]]:
    """Every access of a PrimFunc to the buffers named in ``buffers``: ``(buffer, indices,
    inside)``, where ``inside[d]`` says the analyzer proves index ``d`` inside its dimension
    under the conditions that guard the access.

    TVM's own checker bounds an index by its loops and block iterators only, so it refuses
    accesses that a condition keeps inside: a block predicate (``T.where``, from a split that does
    not divide or dlight's guards), ``T.if_then_else`` padding, an ``if`` (``likely`` or not).
    Here each condition is a constraint while its branch is read, in two spellings: as written
    (block iterators over their domains) and with the iterators replaced by their bindings (the
    loops that a predicate speaks of). Z3 backs the proof where this TVM build has it.
    """
    guard = _Guards(tvm().sym.Analyzer())
    found: list[tuple[Any, Any, tuple[bool, ...]]] = []

    def record(buffer: Any, indices: Any) -> None:
        if buffer.name in buffers:
            inside = tuple(
                guard.inside(i, extent) for i, extent in zip(indices, buffer.shape, strict=False)
            )
            found.append((buffer, indices, inside))

    def expr(node: Any) -> None:
        if _is_sequence(node):
            for item in node:
                expr(item)
            return
        if not hasattr(type(node), "__tvm_ffi_type_info__"):
            return
        access = buffer_access(node)
        if access is not None and not access[2]:
            record(access[0], access[1])
        if _op_name(node) == "if_then_else":
            condition, then_value, else_value = node.args
            expr(condition)
            with guard.scope(condition):
                expr(then_value)
            with guard.scope(tirx().Not(condition)):
                expr(else_value)
            return
        for name, child in node_fields(node):
            if name not in _NOT_CHILDREN:
                expr(child)

    def stmt(node: Any) -> None:
        _tirx, _s_tir = tirx(), s_tir()
        if isinstance(node, _tirx.For):
            guard.bind(node.loop_var, tvm().ir.Range.from_min_extent(node.min, node.extent))
            stmt(node.body)
        elif isinstance(node, _s_tir.SBlockRealize):
            for iter_var, value in zip(node.block.iter_vars, node.iter_values, strict=False):
                guard.bind(iter_var.var, iter_var.dom, value)
            expr(node.iter_values)
            with guard.scope(node.predicate):
                stmt(node.block)
        elif isinstance(node, _tirx.IfThenElse):
            expr(node.condition)
            with guard.scope(node.condition):
                stmt(node.then_case)
            if node.else_case is not None:
                with guard.scope(_tirx.Not(node.condition)):
                    stmt(node.else_case)
        elif isinstance(node, _tirx.LetStmt):
            expr(node.value)
            guard.bind(node.var, None, node.value)
            stmt(node.body)
        else:
            access = buffer_access(node)
            if access is not None:
                record(access[0], access[1])
            for name, child in node_fields(node):
                if name in _NOT_CHILDREN or name in ("reads", "writes", "alloc_buffers"):
                    continue
                for item in child if _is_sequence(child) else (child,):
                    if isinstance(item, _tirx.Stmt | _s_tir.SBlock):
                        stmt(item)
                    elif item is not None:
                        expr(item)

    stmt(func.body)
    return found


def _is_sequence(node: Any) -> bool:
    return isinstance(node, list | tuple) or type(node).__name__ in ("Array", "List")


#: Fields of IR nodes that hold no code to look into.
_NOT_CHILDREN = frozenset({"span", "ty", "dtype", "buffer", "source", "annotations"})


def _op_name(node: Any) -> str:
    """``if_then_else`` for ``T.if_then_else(...)`` (the op is ``prim.if_then_else`` in 0.27)."""
    name = str(getattr(getattr(node, "op", None), "name", ""))
    return name.rsplit(".", 1)[-1]


class _Guards:
    """An analyzer that knows the loops, block iterators and conditions around an access."""

    def __init__(self, analyzer: Any) -> None:
        self.analyzer = analyzer
        self.bindings: dict[Any, Any] = {}
        self.strength = tvm().sym.ProofStrength.SYMBOLIC_BOUND  # Z3 after TVM's own rules

    def bind(self, var: Any, dom: Any, value: Any = None) -> None:
        if dom is not None:
            self.analyzer.bind(var, dom, allow_override=True)
        if value is not None:
            self.bindings[var] = self.substituted(value)

    def substituted(self, expr: Any) -> Any:
        """``expr`` with block iterators (and let variables) replaced by what they are bound to."""
        if not self.bindings:
            return expr
        import tvm_ffi

        bindings = self.bindings
        return tvm_ffi.structural_map(
            expr, (tvm().ir.Var, lambda var: bindings.get(var, var)), order="post"
        )

    @contextlib.contextmanager
    def scope(self, condition: Any) -> Iterator[None]:
        condition = _without_likely(condition)
        with contextlib.ExitStack() as scopes:
            scopes.enter_context(self.analyzer.constraint_scope(condition))
            bound = self.substituted(condition)
            if not bound.same_as(condition):
                scopes.enter_context(self.analyzer.constraint_scope(bound))
            yield

    def proves(self, condition: Any) -> bool:
        if self.analyzer.can_prove(condition, self.strength):
            return True
        # can_prove's canonical form can miss a constraint that the rewrite rules match
        simplified = self.analyzer.rewrite_simplify(condition)
        return isinstance(simplified, tirx().IntImm) and int(simplified) == 1

    def inside(self, index: Any, extent: Any) -> bool:
        for spelling in (index, self.substituted(index)):
            if self.proves(spelling >= 0) and self.proves(spelling < extent):
                return True
        return False


def _without_likely(condition: Any) -> Any:
    """``condition`` with ``T.likely(c)`` read as ``c`` (a hint to the compiler, same value)."""
    import tvm_ffi

    def unwrap(call: Any) -> Any:
        return call.args[0] if _op_name(call) == "likely" else call

    return tvm_ffi.structural_map(condition, (tvm().ir.Call, unwrap), order="post")


#: What a bound-checked kernel raises (``RuntimeError``) when an index leaves its buffer.
BOUND_CHECK_MESSAGE = "OUT OF THE BOUNDS"
_BOUND_CHECKED_PIPELINE = "mlc_bound_checked"


@functools.cache
def bound_checked_pipeline() -> str:
    """The name of a TIR pipeline whose kernels check every buffer index before they use it.

    TVM 0.27's ``tirx.instrument_bound_checkers`` option is inert: its pass instruments only
    buffers announced by a ``buffer_bound`` attribute, and nothing in the TensorIR lowering
    announces any (``StorageFlatten`` did, before ``FlattenBuffer`` replaced it). This pipeline
    runs the default lowering, announces every flattened buffer that is loaded or stored, then
    runs the pass: an out-of-bounds index raises ``RuntimeError`` instead of touching memory.
    """
    _tvm = tvm()
    from tvm.tirx import compilation_pipeline

    @_tvm.transform.module_pass(opt_level=0, name="mlc.AnnounceBufferBounds")
    def announce(mod: Any, _ctx: Any) -> Any:
        functions = {}
        for gvar, func in mod.functions_items():
            if isinstance(func, tirx().PrimFunc):
                func = func.with_body(_announce_buffers(func.body))
            functions[gvar] = func
        return _tvm.IRModule(functions, attrs=mod.attrs)

    def factory() -> Any:
        lower, finalize_host, finalize_device = compilation_pipeline.get_tir_pipeline("s_tir")
        instrument = s_tir().transform.InstrumentBoundCheckers()
        return (
            _tvm.transform.Sequential([lower, announce, instrument]),
            finalize_host,
            finalize_device,
        )

    compilation_pipeline.register_tir_pipeline(_BOUND_CHECKED_PIPELINE, factory)
    return _BOUND_CHECKED_PIPELINE


def _announce_buffers(body: Any) -> Any:
    """``body`` inside one ``buffer_bound`` attribute per buffer accessed with as many indices as
    it has dimensions (the pass compares index and dimension counts)."""
    _tirx = tirx()
    shapes: dict[Any, Any] = {}
    mismatched: set[Any] = set()
    for buffer, indices, _, _ in buffer_accesses(body):
        if len(indices) != len(buffer.shape):
            mismatched.add(buffer)
        shapes.setdefault(buffer, buffer.shape)
    for buffer, shape in shapes.items():
        if buffer not in mismatched and len(shape):
            body = _tirx.AttrStmt(buffer, "buffer_bound", _tirx.op.tvm_tuple(*shape), body)
    return body


def compile_checked(mod: Any, target: Any) -> Any:
    """Build like :func:`compile`, with every buffer index checked at run time (CPU targets).

    Loops are not vectorized: the pass checks a vector access ``A[base:base + n]`` against
    ``base + n`` rather than its last element ``base + n - 1``, and would stop a kernel that
    writes the last vector of a buffer.
    """
    _tvm = tvm()
    with _tvm.transform.PassContext(config={"tirx.disable_vectorize": True}):
        return _tvm.compile(mod, target=target, tir_pipeline=bound_checked_pipeline())


def register_global_func(name: str, func: Any = None, override: bool = False) -> Any:
    """Register a packed function (``tvm.register_func`` in the course); a decorator without f."""
    return tvm().register_global_func(name, func, override=override)


def tensor_intrin_class() -> Any:
    """The tensor intrinsic class (``tvm.tir.TensorIntrin`` in the course)."""
    return s_tir().TensorIntrin


def executable_type() -> type:
    """The class ``tvm.compile`` / ``relax.build`` return (``relax.VirtualMachine`` takes it)."""
    return tvm().runtime.Executable


def benchmark_result(results: list[float]) -> Any:
    """TVM's ``BenchmarkResult`` (what ``time_evaluator`` returns) for per-call times in seconds."""
    from tvm.runtime.module import BenchmarkResult

    return BenchmarkResult(results)


#: Course names of schedule classes that 0.27 renamed (blocks became sblocks).
_RENAMED_BLOCK_NAMES = {
    "Block": "SBlock",
    "BlockRV": "SBlockRV",
    "BlockRealize": "SBlockRealize",
    "BlockScope": "SBlockScope",
}


def course_tir_attr(name: str) -> Any:
    """What the course's ``tvm.tir.<name>`` is in 0.27: the IR name (``tvm.tirx``), else the
    schedule name (``tvm.s_tir``, with blocks renamed to sblocks). Raises ``AttributeError``."""
    for namespace in (tirx(), s_tir()):
        for candidate in (name, _RENAMED_BLOCK_NAMES.get(name, name)):
            if hasattr(namespace, candidate):
                return getattr(namespace, candidate)
    raise AttributeError(f"TVM 0.27 has no tir.{name} (looked in tvm.tirx and tvm.s_tir)")


def support_module(name: str) -> ModuleType:
    """``tvm.support.<name>`` (``tvm.contrib.<name>`` in the course: ``utils``, ``clang``...)."""
    tvm()
    return importlib.import_module(f"tvm.support.{name}")


@contextlib.contextmanager
def well_formed_reasons() -> Iterator[list[str]]:
    """Record why TVMScript finds a Relax module not well-formed; its error says only that it is.

    The parser asks ``relax.analysis.check_well_formed``, the yes/no form of ``well_formed``, which
    raises with the reason (an operator's validation: the shapes or dtypes that disagree). While
    this is active the yes/no form is answered by ``well_formed`` and each reason is appended to
    the yielded list.
    """
    analysis = tvm().relax.analysis
    original = analysis.check_well_formed
    reasons: list[str] = []

    def check_well_formed(obj: Any, check_ty: bool = True) -> bool:
        try:
            analysis.well_formed(obj, check_ty)
        except Exception as err:  # noqa: BLE001 - the reason is the point
            reasons.append(str(err))
            return False
        return True

    analysis.check_well_formed = check_well_formed
    try:
        yield reasons
    finally:
        analysis.check_well_formed = original


# -- builds on disk --------------------------------------------------------------------------------


def save_json(obj: Any) -> str:
    """TVM's JSON of an IR object (what :func:`load_json` reads back)."""
    return str(tvm().ir.save_json(obj))


def load_json(text: str) -> Any:
    return tvm().ir.load_json(text)


def link_shared(output: str, objects: list[str], options: Any = None) -> None:
    """Link object files into a shared library with TVM's compiler driver (``tvm.contrib.cc``
    in the course); raises ``RuntimeError`` with the compiler's output when linking fails."""
    from tvm.support import cc

    cc.create_shared(output, objects, options)


def load_executable(path: str, relax: bool) -> Any:
    """A shared library written by ``export_library``, loaded as what ``tvm.compile`` returns."""
    _tvm = tvm()
    module = _tvm.runtime.load_module(path)
    return _tvm.relax.VMExecutable(module) if relax else _tvm.runtime.Executable(module)


def close_rpc_session(session: Any) -> None:
    """End an RPC session now, so its server is free again even while remote objects of the
    session are still referenced (a traceback keeps them); using them later raises."""
    session._sess["CloseRPCConnection"]()


# -- whole models (PyTorch import, default schedules) ---------------------------------------------


def torch_frontend() -> ModuleType:
    """TVM's PyTorch importers: ``from_exported_program`` and ``from_fx``."""
    tvm()
    from tvm.relax.frontend import torch as frontend

    return frontend


def detach_params(mod: Any) -> tuple[Any, list[Any]]:
    """``mod`` without the weights an importer attached to ``main``, and those weights."""
    tvm()
    from tvm.relax.frontend import detach_params as _detach

    detached, params = _detach(mod)
    return detached, list(params.get("main", []))


def dlight() -> ModuleType:
    """dlight, TVM's rule-based default schedules (``tvm.dlight`` before 0.27)."""
    tvm()
    import tvm.s_tir.dlight as dl

    return dl


def vector_bits(target: Any) -> int:
    """The width of one SIMD register of a CPU target, in bits (128 when LLVM cannot say)."""
    from tvm.target.codegen import llvm_get_vector_width

    try:
        bits = int(llvm_get_vector_width(target))
    except Exception:  # noqa: BLE001 - a target LLVM does not know
        bits = 0
    return bits if bits > 0 else 128


def is_array(obj: Any) -> bool:
    """True for the FFI ``Array`` a Relax function returns for a tuple of outputs."""
    if not is_tvm_object(obj):
        return False
    import tvm_ffi

    return isinstance(obj, tvm_ffi.Array)


# -- builds out of the notebook (PyTorch module, torch.compile backend, exported loader) --------


def bind_inputs(mod: Any, values: dict[int, Any]) -> Any:
    """``mod`` with the parameters of ``main`` at the given indices bound to constants."""
    _tvm = tvm()
    params = list(mod["main"].params)
    binding = {params[index]: _tvm.runtime.tensor(value) for index, value in values.items()}
    return _tvm.relax.transform.BindParams("main", binding)(mod)


#: What an exported loader runs on: TVM's runtime in TVM 0.27's spelling, as plain Python text
#: (the loader imports TVM, not mlc_jupyter).
LOADER_RUNTIME = '''
def _device(kind):
    return tvm.cpu(0) if kind in ("llvm", "c") else tvm.runtime.device(kind, 0)


def _machine(library, kind):
    """The Relax VM over the exported library, on the device of its target."""
    return tvm.relax.VirtualMachine(tvm.runtime.load_module(library), _device(kind))


def _tensor(array, device):
    """An aligned TVM tensor holding a copy of a NumPy array."""
    return tvm.runtime.tensor(array, device=device)
'''
