"""The default schedule of matmul-like kernels: the register tile its rule picks for a CPU, and a
transformer encoder layer built with it (every matmul on the micro-kernel, weights packed at build
time and read ahead panel by panel, outputs PyTorch's)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from model_support import torch_seed

from mlc_jupyter.compilation import build_module
from mlc_jupyter.compilation.conv_schedule import VectorUnit, fits_registers
from mlc_jupyter.compilation.default_schedule import PACKED_SUFFIX
from mlc_jupyter.compilation.matmul_schedule import JOBS_PER_CORE, rule_tile
from mlc_jupyter.compilation.targets import core_cache_bytes
from mlc_jupyter.models import import_model
from mlc_jupyter.tvm_compat import PREFETCH_ANNOTATION, kernel_library, prim_func_type

AVX2 = VectorUnit(lanes=8, registers=16)
AVX512 = VectorUnit(lanes=16, registers=32)


def test_avx2_gets_a_tile_two_vectors_wide_that_leaves_registers_spare():
    """Rows x one vector (eight broadcasts of A per load of B) ran at half the speed of 4 x 2
    on Zen 3, and 4 x 3 or 6 x 2 leave LLVM no spare register."""
    tile = rule_tile((128, 2048, 256), 1, AVX2, cores=2)
    assert (tile.rows, tile.vectors) == (4, 2)
    assert fits_registers(tile.rows, tile.vectors, AVX2.registers)
    assert not fits_registers(4, 3, AVX2.registers) and not fits_registers(6, 2, AVX2.registers)


def test_avx512_gets_a_larger_tile_from_its_32_registers():
    tile = rule_tile((128, 256, 256), 1, AVX512, cores=2)
    assert tile.rows * tile.vectors > 8
    assert fits_registers(tile.rows, tile.vectors, AVX512.registers)


def test_the_tiles_cover_the_matrix_and_the_parallel_jobs_come_from_columns_first():
    rows, cols, k = 128, 768, 256
    tile = rule_tile((rows, cols, k), 1, AVX2, cores=2)
    assert tile.rows * tile.row_tiles[0] * tile.row_tiles[1] == rows
    assert tile.vectors * AVX2.lanes * tile.col_tiles[0] * tile.col_tiles[1] == cols
    assert tile.k_tiles[0] * tile.k_tiles[1] == k
    assert tile.col_tiles[0] >= JOBS_PER_CORE * 2 and tile.row_tiles[0] == 1
    batched = rule_tile((128, 64, 128), 8, AVX2, cores=2)  # attention's heads are the jobs
    assert batched.col_tiles[0] == 1 and batched.row_tiles[0] == 1


def test_a_pointwise_convolution_over_a_large_image_splits_its_pixels_between_the_cores():
    """More rows than columns (MobileNet's first 1x1 layers: 112x112 pixels, 64 channels): the
    cores split ``A``'s rows, each reading its own pixels (those the depthwise kernel before it
    wrote on that core), and every core reads all of the small weight."""
    pixels, cols, k = 112 * 112, 64, 32
    tile = rule_tile((pixels, cols, k), 1, AVX512, cores=2)
    assert tile.rows * tile.row_tiles[0] * tile.row_tiles[1] == pixels
    assert tile.vectors * AVX512.lanes * tile.col_tiles[0] * tile.col_tiles[1] == cols
    assert tile.row_tiles[0] >= JOBS_PER_CORE * 2 and tile.col_tiles[0] == 1
    late = rule_tile((7 * 7, 1024, 1024), 1, AVX512, cores=2)  # a late layer: the weight is larger
    assert late.col_tiles[0] >= JOBS_PER_CORE * 2 and late.row_tiles[0] == 1


def test_a_pointwise_convolution_over_a_small_image_splits_its_pixels_where_the_weight_fits():
    """A 14x14 image's 196 pixels, fewer than the 512 columns: where one core's L2 holds the whole
    weight twice over, 28 tiles of 7 pixels are split evenly between the jobs (each core keeps
    the pixels its neighbours wrote and read on it); elsewhere, and for a plain product, the
    columns are split as before."""
    shape, l2 = (14 * 14, 512, 512), 2 << 20
    tile = rule_tile(shape, 1, AVX512, cores=2, cache_bytes=l2, rows_are_pixels=True)
    assert (tile.rows, tile.row_tiles, tile.col_tiles) == (7, [4, 7], [1, 512 // (16 * 2)])
    assert fits_registers(tile.rows, tile.vectors, AVX512.registers)
    columns = rule_tile(shape, 1, AVX512, cores=2)
    assert columns.row_tiles[0] == 1 and columns.col_tiles[0] >= JOBS_PER_CORE * 2
    for kwargs in ({"cache_bytes": l2}, {"cache_bytes": 1 << 20, "rows_are_pixels": True}):
        assert rule_tile(shape, 1, AVX512, cores=2, **kwargs) == columns  # a product; too small
    late = rule_tile((7 * 7, 1024, 1024), 1, AVX512, cores=2, cache_bytes=64 << 20,
                     rows_are_pixels=True)  # fmt: skip
    assert late.row_tiles[0] == 1  # 7 tiles of 7 pixels: four jobs would not share them evenly


def test_a_pointwise_layer_over_a_small_image_built_here_gives_pytorch_s_outputs():
    torch_seed()
    model = torch.nn.Sequential(  # MobileNet's pair: a depthwise kernel, then the 1x1 product
        torch.nn.Conv2d(64, 64, 3, 1, 1, groups=64), torch.nn.ReLU(),
        torch.nn.Conv2d(64, 256, 1), torch.nn.ReLU(),
    ).eval()  # fmt: skip
    x = torch.randn(1, 64, 14, 14, generator=torch.Generator().manual_seed(2))
    built = build_module(import_model(model, x), persist=False)
    (text,) = [
        f.script() for gv, f in built.mod.functions_items()
        if isinstance(f, prim_func_type()) and "pointwise" in gv.name_hint
    ]  # fmt: skip
    if core_cache_bytes(built.target):  # this machine's L2 is known: the pixels are split
        assert "T.unroll(T.int64(7))" in text
    with torch.no_grad():
        expected = model(x).numpy()
    np.testing.assert_allclose(built(x.numpy()), expected, rtol=1e-4, atol=1e-5)


@pytest.fixture(scope="module")
def encoder():
    torch_seed()
    model = torch.nn.TransformerEncoderLayer(64, 2, 128, batch_first=True).eval()
    x = torch.randn(1, 16, 64, generator=torch.Generator().manual_seed(1))
    return model, x, build_module(import_model(model, x), persist=False)


def test_an_encoder_layer_s_matmuls_run_on_the_micro_kernel_with_packed_weights(encoder):
    kernels = {
        gv.name_hint: f
        for gv, f in encoder[2].mod.functions_items()
        if isinstance(f, prim_func_type())
    }
    matmuls = {n: f for n, f in kernels.items() if "matmul" in n}
    assert len(matmuls) >= 6  # in-projection, two attention products, out-projection, two dense
    for name, func in matmuls.items():
        text = func.script()
        assert '"local"' in text, f"{name} has no register accumulators"
        assert "T.parallel" in text and "T.vectorized" in text
    weighted = [n for n in matmuls if n.endswith(PACKED_SUFFIX)]
    assert len(weighted) >= 4  # the dense layers read their weights packed at build time


def test_a_product_with_a_weight_prefetches_the_weight_panel_it_reads_next(encoder):
    """A weight comes from memory at every call where the model's weights outgrow the cache: its
    product reads the next panel ahead while it computes on the current one
    (``bench/bench_weight_prefetch.py``). Attention's products, whose ``B`` is computed, not."""
    built = encoder[2]
    matmuls = {
        gv.name_hint: f
        for gv, f in built.mod.functions_items()
        if isinstance(f, prim_func_type()) and "matmul" in gv.name_hint
    }
    for name, func in matmuls.items():
        assert (PREFETCH_ANNOTATION in func.script()) == name.endswith(PACKED_SUFFIX), name
        if name.endswith(PACKED_SUFFIX):
            code = kernel_library(built.executable, name).inspect_source("ll")
            assert "@llvm.prefetch" in code, f"{name} was compiled without its prefetches"


def test_an_encoder_layer_built_by_default_gives_pytorch_s_outputs(encoder):
    model, x, built = encoder
    with torch.no_grad():
        expected = model(x).numpy()
    np.testing.assert_allclose(built(x.numpy()), expected, rtol=1e-4, atol=1e-5)


def test_a_dense_layer_whose_result_gelu_reads_twice_builds_and_gives_pytorch_s_outputs():
    # GELU reads its input twice (x * erf(x / sqrt 2)): inlining one reader into the
    # accumulators' write-back left the other reading a buffer nothing wrote (a build error)
    torch_seed()
    model = torch.nn.Sequential(
        torch.nn.Linear(32, 64, bias=False), torch.nn.GELU(), torch.nn.Linear(64, 32)
    ).eval()
    x = torch.randn(1, 8, 32, generator=torch.Generator().manual_seed(6))
    built = build_module(import_model(model, x), persist=False)
    assert any(
        "matmul" in gv.name_hint and "gelu" in gv.name_hint for gv, _ in built.mod.functions_items()
    )
    with torch.no_grad():
        expected = model(x).numpy()
    np.testing.assert_allclose(built(x.numpy()), expected, rtol=1e-4, atol=1e-5)
