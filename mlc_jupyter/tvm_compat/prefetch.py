"""A CPU kernel's weight read ahead: the pass that prefetches the next weight panel.

A model's weight comes from memory at every call where the model's weights outgrow the cache.
A kernel reads it panel by panel (a block of output channels, a matrix product's column panel:
:mod:`mlc_jupyter.compilation.matmul_schedule`), and each panel's first reads waited for memory
while the core's arithmetic idled, the hardware prefetcher a step behind. A loop the schedule
annotates with :data:`PREFETCH_ANNOTATION` starts each iteration with prefetches of a part of the
panel read next: the job's own next panel, or the one the next jobs read, which the jobs of a
panel share out, so the panel arrives while the loops over the current one compute
(``bench/bench_weight_prefetch.py``).
"""

from __future__ import annotations

import math
from typing import Any

from .namespaces import structural_map, tir, tvm
from .tensorir import (
    analyzer,
    buffer_access,
    is_ir_array,
    is_ir_node,
    node_fields,
    region_buffer,
    tir_nodes,
    var_dtype,
)

#: The loop annotation (``sch.annotate(loop, PREFETCH_ANNOTATION, read)``): the block under the
#: loop reads the weight as its ``read``-th read region. The panels and their order come from the
#: loops the weight's index takes (:func:`_plan`), so a tuning's mutated tile sizes need no new
#: annotation.
PREFETCH_ANNOTATION = "mlc_prefetch_next_panel"
#: The loop annotation that asks for other caches (one of :data:`PREFETCH_LOCALITIES`).
PREFETCH_LOCALITY_ANNOTATION = "mlc_prefetch_locality"
_PREFETCH_OP = "tirx.prefetch"
#: ``llvm.prefetch``'s arguments after the address but the locality: a read, of data.
_READ, _DATA = 0, 1
#: ``llvm.prefetch``'s localities a loop may ask for, the default first: every cache (x86's
#: ``prefetcht0``; the default builds' kernels were fastest so), or the second level and beyond
#: (``prefetcht2``: a kernel that reuses each weight vector for few rows, a 7x7 layer's Winograd
#: products, streams its weight faster than the first level's outstanding misses let it).
#: ``bench/bench_weight_prefetch.py`` races them.
PREFETCH_LOCALITIES = (3, 1)
_CHILDREN = ("body", "seq", "then_case", "else_case", "block")


def prefetch_next_panels(locality: int | None = None) -> Any:
    """A pass (on scheduled TensorIR, before lowering): each loop annotated with
    :data:`PREFETCH_ANNOTATION` starts its body with prefetches of the next panel's rows, into
    the caches its :data:`PREFETCH_LOCALITY_ANNOTATION` names (else the first locality of
    :data:`PREFETCH_LOCALITIES`), or every loop's into ``locality`` where given (a bench's race)."""
    nodes = tir()

    def rewrite(func: Any, _mod: Any, _ctx: Any) -> Any:
        plans: list[tuple[Any, list[Any]]] = []
        _find(func.body, [], plans, locality)
        if not plans:
            return func

        def insert(loop: Any) -> Any:
            for var, prefetches in plans:
                if loop.loop_var.same_as(var):
                    own = (PREFETCH_ANNOTATION, PREFETCH_LOCALITY_ANNOTATION)
                    annotations = {k: v for k, v in loop.annotations.items() if k not in own}
                    return nodes.For(
                        loop.loop_var, loop.min, loop.extent, loop.kind,
                        nodes.SeqStmt([*prefetches, loop.body]), loop.thread_binding, annotations,
                    )  # fmt: skip
            return loop

        return func.with_body(structural_map(func.body, nodes.For, insert))

    return tvm().tirx.transform.prim_func_pass(rewrite, opt_level=0, name="mlc.PrefetchNextPanels")


def _children(stmt: Any) -> list[Any]:
    """The statements directly under ``stmt``."""
    stmt_type = tir_nodes().Stmt
    out: list[Any] = []
    for name, child in node_fields(stmt):
        if name in _CHILDREN:
            items = list(child) if is_ir_array(child) else [child]
            out.extend(item for item in items if isinstance(item, stmt_type))
    return out


def _find(stmt: Any, loops: list[Any], plans: list[Any], locality: int | None) -> None:
    """Walk ``stmt`` under ``loops`` (outermost first), planning each annotated loop."""
    if isinstance(stmt, tir_nodes().For):
        if PREFETCH_ANNOTATION in stmt.annotations:
            asked = _int_value(stmt.annotations.get(PREFETCH_LOCALITY_ANNOTATION))
            default = asked if asked in PREFETCH_LOCALITIES else PREFETCH_LOCALITIES[0]
            prefetches = _plan(stmt, loops, default if locality is None else locality)
            if prefetches:
                plans.append((stmt.loop_var, prefetches))
        loops = [*loops, stmt]
    for child in _children(stmt):
        _find(child, loops, plans, locality)


def _int_value(value: Any) -> int | None:
    """An annotation's value as an int, ``None`` where it is none (a trace file may carry any)."""
    return int(value) if isinstance(value, int | tir().IntImm) else None


def _realizes(stmt: Any, loops: list[Any]) -> list[tuple[Any, list[Any]]]:
    """Every block realize under ``stmt`` with the loops from ``stmt`` down to it."""
    n = tir_nodes()
    if isinstance(stmt, n.BlockRealize):
        return [(stmt, loops)]
    if isinstance(stmt, n.For):
        loops = [*loops, stmt]
    return [found for child in _children(stmt) for found in _realizes(child, loops)]


def _plan(loop: Any, outer: list[Any], locality: int) -> list[Any]:
    """The prefetches that start each iteration of annotated ``loop`` (under ``outer``), or none
    where the loop nest is not the one the annotation describes.

    The *panel* is what one iteration of the innermost loop above ``loop`` (within the job) that
    indexes the weight and picks outputs reads, or what a job reads where no such loop exists: a
    loop of the reduction above ``loop`` (a convolution's kernel rows) reads the same panel on.
    The next panel (:func:`_next_panel`) is spread evenly, vector by vector in the order the
    kernel reads them, over the iterations from the panel's loop down to ``loop``."""
    nodes = tir()
    read = _int_value(loop.annotations[PREFETCH_ANNOTATION])  # negative: from the last
    parallel = [lp for lp in outer if lp.kind == nodes.ForKind.PARALLEL]
    realizes = _realizes(loop.body, [loop])
    if read is None or not parallel or len(realizes) != 1:
        return []  # a value from a trace file that is no read index asks for nothing
    job = parallel[-1]
    realize, inner = realizes[0]
    block = realize.block
    if not block.reads:
        return []
    weight = region_buffer(block.reads[read % len(block.reads)])
    load = next((idx for buf, idx in _loads(block.body) if buf.same_as(weight)), None)
    if load is None:
        return []
    bound = list(zip(block.iter_vars, realize.iter_values, strict=True))
    binding = [(iv.var, value) for iv, value in bound]
    indices = [_substitute(i, binding) for i in load]
    in_index = _vars(indices)
    within = outer[outer.index(job) + 1 :]
    picking = _vars([v for iv, v in bound if int(iv.iter_type) == nodes.IterVar.DataPar])
    panel_loops = [
        lp for lp in within if _has(lp.loop_var, in_index) and _has(lp.loop_var, picking)
    ]
    plan = _next_panel(job, panel_loops, indices)
    if plan is None:
        return []
    successor, shares, share = plan
    above = within[within.index(panel_loops[-1]) + 1 :] if panel_loops else within
    spread = [*above, loop]  # the loops the prefetches of a panel are spread over
    below = [*spread[:-1], *inner]
    # a vector of the weight per iteration of the loops its index takes, but the lanes'
    vectors = [
        lp for lp in below if lp.kind != nodes.ForKind.VECTORIZED and _has(lp.loop_var, in_index)
    ]
    dtype = var_dtype(job.loop_var)

    def const(value: int) -> Any:
        return nodes.IntImm(dtype, value)

    total = math.prod(int(lp.extent) for lp in vectors)
    per_share = -(-total // shares)
    iterations = math.prod(int(lp.extent) for lp in spread)
    per_iteration = -(-per_share // iterations)
    slots = iterations * per_iteration
    iteration = const(0)  # the annotated loop's iteration number under the panel's loop
    for lp in spread:
        iteration = iteration * const(int(lp.extent)) + _as(
            lp.loop_var, var_dtype(lp.loop_var), dtype
        )
    # a slot's vector is slot * per_share // slots, computed wide where that could overflow
    wide = "int64" if slots * per_share >= 2**31 else dtype
    statements = []
    for q in range(per_iteration):
        slot = _as(iteration, dtype, wide) * nodes.IntImm(wide, per_iteration) + q
        vector = nodes.floordiv(slot * nodes.IntImm(wide, per_share), nodes.IntImm(wide, slots))
        vector = nodes.Min(share * const(per_share) + _as(vector, wide, dtype), const(total - 1))
        at = [*successor, *((lp.loop_var, const(0)) for lp in below if not _has(lp, vectors))]
        for lp in reversed(vectors):
            at.append((lp.loop_var, nodes.floormod(vector, const(int(lp.extent)))))
            vector = nodes.floordiv(vector, const(int(lp.extent)))
        address = [
            _substitute(i, [(k, _as(v, dtype, var_dtype(k))) for k, v in at]) for i in indices
        ]
        statements.append(_prefetch(weight, address, locality))
    return statements


def _next_panel(
    job: Any, panel_loops: list[Any], indices: list[Any]
) -> tuple[list[tuple[Any, Any]], int, Any] | None:
    """Where the next panel is, as ``(successor, shares, share)``: the values of the job's and
    the panel loops' variables that read it, how many jobs share its prefetch out, and which
    share this job takes. With panel loops in the job: the job's next panel, and after its last
    the next job's first (the next the core runs), all of it. Without: the panel the jobs ``jobs
    per panel`` later read, shared out among the jobs of the current one. ``None`` where every
    job reads the whole weight at once."""
    nodes = tir()
    dtype = var_dtype(job.loop_var)

    def const(value: int) -> Any:
        return nodes.IntImm(dtype, value)

    last_job = const(int(job.extent) - 1)
    if not panel_loops:
        jobs_per_panel = _jobs_per_panel(indices, job.loop_var)
        if jobs_per_panel is None:
            return None
        successor = [(job.loop_var, nodes.Min(job.loop_var + const(jobs_per_panel), last_job))]
        return successor, jobs_per_panel, nodes.floormod(job.loop_var, const(jobs_per_panel))
    count = math.prod(int(lp.extent) for lp in panel_loops)
    flat = const(1)  # the next panel's number in the job's order, from 1 past the current one
    for n, lp in enumerate(panel_loops):
        stride = math.prod(int(p.extent) for p in panel_loops[n + 1 :])
        flat = flat + _as(lp.loop_var, var_dtype(lp.loop_var), dtype) * const(stride)
    successor = [
        (job.loop_var, nodes.Min(job.loop_var + nodes.floordiv(flat, const(count)), last_job))
    ]
    flat = nodes.floormod(flat, const(count))
    for lp in reversed(panel_loops):
        successor.append((lp.loop_var, nodes.floormod(flat, const(int(lp.extent)))))
        flat = nodes.floordiv(flat, const(int(lp.extent)))
    return successor, 1, const(0)


def _jobs_per_panel(indices: list[Any], job: Any) -> int | None:
    """How many consecutive jobs read one panel: the divisor of the job in the weight's index
    (1 where the index takes the job whole), ``None`` where every job reads the whole weight."""
    nodes = tir()
    for item in _walk(indices):
        if isinstance(item, nodes.FloorDiv) and item.a.same_as(job):
            return int(item.b) if isinstance(item.b, nodes.IntImm) else None
    return 1 if _has(job, _vars(indices)) else None


def _walk(node: Any) -> list[Any]:
    """Every IR node under ``node`` (an expression or a statement), ``node`` first."""
    out, stack = [], [node]
    while stack:
        item = stack.pop()
        if isinstance(item, list | tuple) or is_ir_array(item):
            stack.extend(item)
            continue
        if not is_ir_node(item):
            continue
        out.append(item)
        stack.extend(child for name, child in node_fields(item) if name not in ("span", "ty"))
    return out


def _loads(node: Any) -> list[tuple[Any, Any]]:
    """Every ``(buffer, indices)`` a load under ``node`` reads."""
    found = []
    for item in _walk(node):
        access = buffer_access(item)
        if access is not None and not access[2]:
            found.append((access[0], access[1]))
    return found


def _vars(expr: Any) -> list[Any]:
    var_type = tir_nodes().Var
    return [item for item in _walk(expr) if isinstance(item, var_type)]


def _has(var: Any, variables: list[Any]) -> bool:
    return any(var.same_as(v) for v in variables)


def _substitute(expr: Any, values: list[tuple[Any, Any]]) -> Any:
    """``expr`` with each variable of ``values`` (``(variable, value)`` pairs) replaced by its
    value, simplified."""

    def replace(var: Any) -> Any:
        for key, value in values:
            if var.same_as(key):
                return value
        return var

    return analyzer().simplify(structural_map(expr, tir_nodes().Var, replace))


def _as(expr: Any, dtype: str, wanted: str) -> Any:
    """``expr`` (of ``dtype``) cast to ``wanted``."""
    return expr if dtype == wanted else tir().Cast(wanted, expr)


def _prefetch(buffer: Any, indices: list[Any], locality: int) -> Any:
    """``T.evaluate(T.call_intrin("void", "tirx.prefetch", T.address_of(buffer[indices]), ...))``."""
    nodes = tir()
    address = nodes.address_of(nodes.BufferLoad(buffer, indices))
    call = nodes.call_intrin("void", _PREFETCH_OP, address, _READ, locality, _DATA)
    return nodes.Evaluate(call)
