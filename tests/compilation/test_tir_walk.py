"""Walking a kernel's body: the statement walk the build's checks use sees what the full walk sees."""

from __future__ import annotations

import torch
from build_support import prim_funcs
from model_support import mobilenet_block, torch_seed

from mlc_jupyter.cells import parse_script
from mlc_jupyter.compilation import resolve_target
from mlc_jupyter.compilation.default_schedule import prepare_model
from mlc_jupyter.compilation.tir_walk import buffer_views, ir_nodes, statements
from mlc_jupyter.models import import_model
from mlc_jupyter.tvm_compat import tir_nodes

#: Views declared in both branches of a condition, one inside a loop's body.
BRANCHED_VIEWS = """
@T.prim_func
def branched(A: T.Buffer((16,), "float32"), n: T.int32, B: T.Buffer((4, 4), "float32")):
    if n > 0:
        Flat = T.decl_buffer((16,), "float32", data=B.data)
        for i in range(16):
            with T.block("flat"):
                vi = T.axis.spatial(16, i)
                Flat[vi] = A[vi]
    else:
        for i in range(4):
            Row = T.decl_buffer((4,), "float32", data=B.data, elem_offset=4 * i)
            for k in range(4):
                with T.block("row"):
                    vk = T.axis.spatial(4, k)
                    Row[vk] = A[vk]
"""


def full_walk_statements(body):
    stmt = tir_nodes().Stmt
    return [node for node, _ in ir_nodes(body) if isinstance(node, stmt)]


def test_the_statement_walk_finds_each_statement_of_a_scheduled_model_in_source_order():
    torch_seed(0)
    model = mobilenet_block()
    x = torch.randn(1, 32, 16, 16)
    prepared = prepare_model(import_model(model, x).mod, resolve_target("llvm"))
    kernels = prim_funcs(prepared.mod)
    assert kernels
    for name, func in kernels.items():
        walked = list(statements(func.body))
        expected = full_walk_statements(func.body)
        assert len(walked) == len(expected), name
        assert all(a.same_as(b) for a, b in zip(walked, expected, strict=True)), name


def test_views_declared_in_either_branch_of_a_condition_and_in_a_loop_are_found():
    func = parse_script(BRANCHED_VIEWS, {}, kind="tir").objects["branched"]
    views = buffer_views(func.body)
    assert sorted(view.name for view in views) == ["Flat", "Row"]
    assert all(owner.name == "B" for owner, _ in views.values())
    assert len(list(statements(func.body))) == len(full_walk_statements(func.body))
