"""Contract of tvm_compat/tensorir.py: how 0.27 reflects TensorIR nodes (type keys of buffer
stores and loads, fields), the attributes a PrimFunc carries and the analyzer. A failure names
what TVM changed."""

from __future__ import annotations

from mlc_jupyter import tvm_compat


def _shifted(offset: int):
    """``B[i] = A[i + offset]`` over 8 elements (out of bounds for any offset > 0)."""
    te = tvm_compat.tvm().te
    a = te.placeholder((8,), name="A")
    b = te.compute((8,), lambda i: a[i + offset], name="B")
    return te.create_prim_func([a, b])


def test_buffer_accesses_attributes_and_nodes_are_where_0_27_keeps_them():
    func = _shifted(0)
    assert tvm_compat.NOALIAS_ATTR in func.attrs, (
        f"a PrimFunc from te no longer carries {tvm_compat.NOALIAS_ATTR!r}: {dict(func.attrs)}"
    )
    nodes = tvm_compat.tir_nodes()
    names = ("For", "BlockRealize", "Block", "IfThenElse", "LetStmt", "Stmt", "Var", "IntImm")
    for name in (*names, "Not", "Call", "Range"):
        assert isinstance(getattr(nodes, name), type), f"tir_nodes().{name} is gone"
    stack, accesses = [func.body], []
    while stack:  # every node, by reflection, as compilation/tir_walk.py walks
        node = stack.pop()
        if tvm_compat.is_ir_array(node):
            stack.extend(node)
        elif tvm_compat.is_ir_node(node):
            access = tvm_compat.buffer_access(node)
            if access is not None:
                accesses.append((str(access[0].name), access[2]))
            fields = tvm_compat.node_fields(node)
            stack.extend(child for name, child in fields if name not in ("span", "ty", "dtype"))
    assert ("B", True) in accesses and ("A", False) in accesses, (
        "buffer stores/loads are no longer found by their type keys (tensorir._STORE_KEY, "
        f"_LOAD_KEY); found {accesses}"
    )
    x = tvm_compat.tir().Var("x", "int32")
    assert int(tvm_compat.analyzer().simplify(x * 0 + 3)) == 3, "the analyzer moved or changed"


def test_a_scalar_parameter_is_told_from_a_buffer_by_its_type():
    tir = tvm_compat.tir()
    n = tir.Var("n", "int32")
    func = _shifted(0)
    assert tvm_compat.is_scalar_param(n) and tvm_compat.var_dtype(n) == "int32", (
        "a scalar Var no longer has a PrimType (is_scalar_param) with its dtype (var_dtype)"
    )
    assert not any(tvm_compat.is_scalar_param(p) for p in func.params)
    buffers = tvm_compat.param_buffers(func)
    assert [str(b.name) for b in buffers] == ["A", "B"], (
        f"a PrimFunc's buffer params are no longer Vars with a BufferType: {buffers}"
    )
    assert [tuple(int(d) for d in b.shape) for b in buffers] == [(8,), (8,)]


def test_a_scalar_parameter_specialized_to_a_value_leaves_the_signature():
    from mlc_jupyter import parse_tir

    func = parse_tir(
        "@T.prim_func\n"
        "def scale(A: T.Buffer((8,), 'float32'), B: T.Buffer((8,), 'float32'), a: T.float32):\n"
        "    for i in range(8):\n"
        "        with T.block('B'):\n"
        "            vi = T.axis.spatial(8, i)\n"
        "            B[vi] = A[vi] * a\n"
    )
    fixed = tvm_compat.specialize_scalars(func, {"a": 2.5})
    assert [str(p.name) for p in fixed.params] == ["A", "B"], (
        f"PrimFunc.specialize no longer drops the scalar from the signature: {fixed.params}"
    )
    assert "T.float32(2.5)" in fixed.script(), "the value is not written in with its dtype"


def test_with_parameters_moves_buffers_between_the_signature_and_the_root_block():
    te = tvm_compat.tvm().te
    a = te.placeholder((8,), name="A")
    b = te.compute((8,), lambda i: a[i] * 2.0, name="B")
    c = te.compute((8,), lambda i: b[i] + 1.0, name="C")
    func = te.create_prim_func([a, c])
    params = {str(p.name): p for p in func.params}
    (inner,) = func.body.block.alloc_buffers  # B, as 0.27 keeps TE's intermediates
    moved = tvm_compat.with_parameters(func, [params["A"], inner])
    assert [str(p.name) for p in moved.params] == ["A", "B"], moved.params
    assert [str(b.name) for b in moved.body.block.alloc_buffers] == ["C"]
    tvm_compat.tvm().compile(tvm_compat.ir_module_type()({"main": moved}), "llvm")
    assert isinstance(te.thread_axis("threadIdx.x"), tvm_compat.iter_var_type()), (
        "te.thread_axis no longer makes the IterVar te's op.axis holds"
    )


def test_the_anchor_block_of_a_kernel_is_its_reduction_and_none_without_one():
    te = tvm_compat.tvm().te
    a, w = te.placeholder((4, 8), name="A"), te.placeholder((8, 8), name="W")
    k = te.reduce_axis((0, 8), name="k")
    mm = te.compute((4, 8), lambda i, j: te.sum(a[i, k] * w[k, j], axis=k), name="mm")
    relu = te.compute((4, 8), lambda i, j: te.max(mm[i, j], 0.0), name="relu")
    fused = tvm_compat.tvm().IRModule({"main": te.create_prim_func([a, w, relu])})
    anchor = tvm_compat.anchor_block(fused)
    assert anchor is not None and anchor.name_hint == "mm", (
        "find_anchor_sblock no longer finds a kernel's reduction under an epilogue "
        f"(tvm_compat.anchor_block): {anchor}"
    )
    assert tvm_compat.anchor_block(tvm_compat.tvm().IRModule({"main": _shifted(0)})) is None
