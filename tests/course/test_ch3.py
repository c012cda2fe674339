"""Chapter 3 (Relax end to end): the book's MLP modules run through ``%%relax`` and match NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from course_support import gone_listing_error, mlp_weights, numpy_mlp, run_listing, run_relax

from mlc_jupyter import tvm_compat

W = mlp_weights()
ARGS = (W["x"], W["w0"], W["b0"], W["w1"], W["b1"])
EXPECTED = numpy_mlp(*ARGS)


@pytest.fixture(scope="module")
def env_functions():
    """The book's §3.6.1 "env.linear" / "env.relu", on NumPy instead of torch."""
    import tvm

    def linear(x, w, b, out):
        out.copyfrom(x.numpy() @ w.numpy().T + b.numpy())

    def relu(x, out):
        out.copyfrom(np.maximum(x.numpy(), 0))

    tvm.register_global_func("env.linear", linear, override=True)
    tvm.register_global_func("env.relu", relu, override=True)


def test_mlp_module_with_call_dps_packed_matches_numpy(shell):
    mod = run_listing(shell, "ch3_mlp_call_dps_packed", "relax")
    assert sorted(gv.name_hint for gv in mod.get_global_vars()) == ["linear0", "main", "relu0"]
    np.testing.assert_allclose(run_relax(mod, *ARGS), EXPECTED, rtol=1e-4, atol=1e-4)


def test_symbolic_shapes_let_the_same_module_run_another_model_size(shell):
    mod = run_listing(shell, "ch3_mlp_call_dps_packed", "relax")
    rng = np.random.default_rng(3)
    args = [rng.random(s, dtype="float32") for s in [(1, 20), (16, 20), (16,), (4, 16), (4,)]]
    np.testing.assert_allclose(run_relax(mod, *args), numpy_mlp(*args), rtol=1e-4, atol=1e-4)


def test_function_with_two_dataflow_blocks_computes_the_same_mlp(shell):
    import tvm

    prims = run_listing(shell, "ch3_mlp_call_dps_packed", "relax")
    main = run_listing(shell, "ch3_two_dataflow_blocks", "relax")
    assert isinstance(main, tvm.relax.Function)
    mod = tvm.IRModule({"main": main, "linear0": prims["linear0"], "relu0": prims["relu0"]})
    np.testing.assert_allclose(run_relax(mod, *ARGS), EXPECTED, rtol=1e-4, atol=1e-4)


def test_extern_call_module_runs_the_registered_library_functions(shell, env_functions):
    mod = run_listing(shell, "ch3_extern_call", "relax")
    np.testing.assert_allclose(run_relax(mod, *ARGS), EXPECTED, rtol=1e-4, atol=1e-4)


def test_mixture_of_tensorir_and_library_calls_matches_numpy(shell, env_functions):
    mod = run_listing(shell, "ch3_mixture", "relax")
    np.testing.assert_allclose(run_relax(mod, *ARGS), EXPECTED, rtol=1e-4, atol=1e-4)


def test_bound_parameters_leave_only_the_input_to_pass(shell, env_functions):
    import tvm

    mod = run_listing(shell, "ch3_mixture", "relax")
    params = {k: tvm_compat.tensor(W[k]) for k in ("w0", "b0", "w1", "b1")}
    bound = tvm.relax.transform.BindParams("main", params)(mod)
    assert len(bound["main"].params) == 1
    np.testing.assert_allclose(run_relax(bound, W["x"]), EXPECTED, rtol=1e-4, atol=1e-4)


def test_pre_2023_side_by_side_listing_is_refused_at_its_first_old_annotation(shell):
    err = gone_listing_error(shell, "ch3_mlp_side_by_side_pre2023", "relax")
    assert "Tensor" in err.message
    assert err.source_line.strip() == 'def main(x: Tensor((1, 784), "float32"),'
