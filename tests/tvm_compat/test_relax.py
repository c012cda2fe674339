"""Contract of tvm_compat/relax.py: Relax's named pipelines, expression kinds, types and
bindings as graph/ and models/ read them, and the PyTorch frontends. A failure names what TVM
changed."""

from __future__ import annotations

from mlc_jupyter import tvm_compat


def _mlp():
    relax = tvm_compat.tvm().relax
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 4), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(relax.op.nn.relu(x))
            out = bb.emit_output(relax.op.add(y, y))
        bb.emit_func_output(out)
    return bb.get()


def test_functions_bindings_and_types_read_as_graph_and_models_expect():
    mod = _mlp()
    func = mod["main"]
    assert isinstance(func, tvm_compat.relax_function_type())
    bindings = tvm_compat.relax_bindings(func)
    assert [tvm_compat.relax_expr_kind(value) for _, value in bindings] == ["call", "call"]
    var, value = bindings[0]
    assert tvm_compat.var_name(var), "a Relax variable has no name (var_name)"
    assert tvm_compat.tensor_shape_dtype(value) == (("1", "4"), "float32"), (
        "a Relax expression's type (expr_type) no longer says shape and dtype"
    )
    assert tvm_compat.relax_expr_kind(tvm_compat.relax_function_result(func)) == "var"


def test_the_named_pipelines_are_passes():
    names = tvm_compat.relax_pipeline_names()
    assert "default" in names and "target" in names, f"Relax's pipelines are {names}"
    target = tvm_compat.tvm().target.Target("llvm")
    for name in ("default", "target"):
        assert isinstance(tvm_compat.relax_pipeline(name, target), tvm_compat.pass_type())
    relax = tvm_compat.tvm().relax

    @relax.expr_functor.mutator
    class Rewriter(relax.PyExprMutator):
        pass

    assert tvm_compat.is_expr_mutator_class(Rewriter) and tvm_compat.is_expr_mutator(Rewriter())
    frontend = tvm_compat.torch_frontend()
    assert hasattr(frontend, "from_exported_program") and hasattr(frontend, "from_fx")


def test_bound_inputs_become_constants():
    import numpy as np

    mod = tvm_compat.bind_inputs(_mlp(), {0: np.ones((1, 4), "float32")})
    assert len(mod["main"].params) == 0, "BindParams no longer binds main's parameter by index"


def test_one_call_is_a_module_of_its_own_with_its_constants_kept():
    import numpy as np

    relax = tvm_compat.tvm().relax
    x = relax.Var("x", relax.TensorType((1, 4), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit(relax.op.nn.relu(x))
            out = bb.emit_output(relax.op.add(y, relax.const(np.full((1, 4), 2, "float32"))))
        bb.emit_func_output(out)
    call = tvm_compat.relax_bindings(bb.get()["main"])[1][1]
    alone = tvm_compat.one_call_module(call)
    [(_, value)] = tvm_compat.relax_bindings(alone["main"])
    assert len(alone["main"].params) == 1 and str(value.op.name) == "relax.add"
    assert tvm_compat.relax_expr_kind(value.args[1]) == "const", "the constant was not kept"
    got = tvm_compat.tvm().compile(alone, "llvm")
    vm = tvm_compat.tvm().relax.VirtualMachine(got, tvm_compat.tvm().cpu())
    result = vm["main"](tvm_compat.tvm().runtime.tensor(np.ones((1, 4), "float32")))
    np.testing.assert_array_equal(result.numpy(), np.full((1, 4), 3, "float32"))


def test_constants_as_digests_tell_weights_apart_without_holding_them():
    import numpy as np

    def with_weight(weight):
        bound = tvm_compat.bind_inputs(_mlp(), {0: weight})
        return tvm_compat.constants_as_digests(bound)

    rng = np.random.default_rng(0)
    weight = rng.standard_normal((1, 4)).astype("float32")
    nudged = weight.copy()
    nudged[0, 3] = np.nextafter(nudged[0, 3], np.float32(1))  # one bit of one weight
    same, also_same = with_weight(weight), with_weight(weight.copy())
    assert tvm_compat.structural_equal(same, also_same)
    assert not tvm_compat.structural_equal(same, with_weight(nudged))
    assert not tvm_compat.structural_equal(same, with_weight(weight.astype("float64")))
    text = tvm_compat.save_json(same)
    assert tvm_compat.structural_equal(tvm_compat.load_json(text), also_same)  # as on a hit
    held = tvm_compat.constant_array(tvm_compat.relax_bindings(same["main"])[0][1].args[0])
    assert held.dtype == np.uint8 and held.shape == (32,)  # the weight's SHA-256, not the weight
