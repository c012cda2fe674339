"""Bench: a depthwise convolution fused into the 1x1 product after it, against the two in turn.

MobileNet's blocks are a 3x3 depthwise convolution (with its bias and ReLU) and a 1x1 convolution
that reads all of its channels. Built as two kernels, the depthwise output makes a round trip
through the caches between them; fused, each band of output rows computes the depthwise rows it
needs, all channels, into a buffer that stays in L1, and the band's products read it there.

This builds one TE computation per MobileNet shape (depthwise, bias, ReLU, product, bias, ReLU)
and schedules it twice with the same micro-kernels: **fused** (the depthwise band computed under
each band of rows, before the band's products) and **apart** (the depthwise output computed for
the whole image first, in a parallel loop of its own, as two kernels would). Both are checked
against NumPy and timed in turns, warm (each kernel's inputs and outputs stay in the caches, as
they do inside the model when the host keeps both cores close). Whatever the fused kernel gains
here is the most fusing the default build's kernels could gain.

    python bench/bench_depthwise_fusion.py [--rounds 11] [--rows 7] [--vectors 2] [--band 1]
"""

from __future__ import annotations

import argparse
import statistics

#: (height = width, channels, output channels) of MobileNet v1's stride-1 depthwise blocks.
SHAPES = ((112, 32, 64), (56, 128, 128), (28, 256, 256))


def computation(size: int, channels: int, outputs: int) -> list:
    """The block's TE tensors: ``[input, depthwise weight, its bias, product weight, its bias,
    output]``."""
    from mlc_jupyter.tvm_compat import tvm

    te, tirx = tvm().te, tvm().tirx
    x = te.placeholder((1, size, size, channels), name="X")
    wd = te.placeholder((3, 3, channels), name="WD")
    bd = te.placeholder((channels,), name="BD")
    wp = te.placeholder((channels, outputs), name="WP")
    bp = te.placeholder((outputs,), name="BP")

    def padded(b, y, x_, c):
        inside = tirx.all(y >= 1, y <= size, x_ >= 1, x_ <= size)
        return tirx.if_then_else(inside, x[b, y - 1, x_ - 1, c], 0.0)

    pad = te.compute((1, size + 2, size + 2, channels), padded, name="pad")
    ry, rx = te.reduce_axis((0, 3), "ry"), te.reduce_axis((0, 3), "rx")
    dw = te.compute(
        (1, size, size, channels),
        lambda b, y, x_, c: te.sum(pad[b, y + ry, x_ + rx, c] * wd[ry, rx, c], axis=[ry, rx]),
        name="dw",
    )
    act = te.compute(dw.shape, lambda *i: te.max(dw(*i) + bd[i[3]], 0.0), name="act")
    rc = te.reduce_axis((0, channels), "rc")
    pw = te.compute(
        (1, size, size, outputs),
        lambda b, y, x_, k: te.sum(act[b, y, x_, rc] * wp[rc, k], axis=rc),
        name="pw",
    )
    out = te.compute(pw.shape, lambda *i: te.max(pw(*i) + bp[i[3]], 0.0), name="out")
    return [x, wd, bd, wp, bp, out]


def scheduled(tensors: list, fused: bool, rows: int, vectors: int, band: int, lanes: int):
    """The computation scheduled: the product's pixels by ``rows`` x ``vectors`` vectors of
    ``lanes`` accumulators, each core a half of the image's rows, ``band`` rows at a time; the
    depthwise tile ``rows`` pixels x one vector, under each band when ``fused``."""
    from mlc_jupyter.tvm_compat import Schedule, tvm

    sch = Schedule(tvm().te.create_prim_func(tensors))
    product, depthwise = sch.get_sblock("pw"), sch.get_sblock("dw")
    activation = sch.get_sblock("act")
    sch.compute_inline(sch.get_sblock("pad"))
    b, y, x, k, c = sch.get_loops(product)
    half, y = sch.split(y, [2, None])
    bands, y = sch.split(y, [None, band])
    xo, xi = sch.split(x, [None, rows])
    ko, kv, kl = sch.split(k, [None, vectors, lanes])
    co, cu = sch.split(c, [None, 4])
    sch.reorder(b, half, bands, ko, y, xo, co, cu, xi, kv, kl)
    sch.parallel(sch.fuse(b, half))
    write = sch.cache_write(product, 0, "local")
    sch.reverse_compute_inline(sch.get_sblock("out"))
    sch.reverse_compute_at(write, xo)
    for loop in (cu, xi, kv):
        sch.unroll(loop)
    sch.vectorize(kl)
    sch.vectorize(sch.get_loops(sch.decompose_reduction(product, co))[-1])
    sch.vectorize(sch.split(sch.get_loops(write)[-1], [None, lanes])[1])
    if fused:
        sch.compute_at(activation, bands, preserve_unit_loops=True)
        sch.compute_at(depthwise, bands, preserve_unit_loops=True)
    dy, dx, dc, dry, drx = sch.get_loops(depthwise)[-5:]
    dxo, dxi = sch.split(dx, [None, rows])
    dco, dcl = sch.split(dc, [None, lanes])
    sch.reorder(dy, dco, dxo, dry, drx, dxi, dcl)
    if not fused:
        sch.parallel(sch.fuse(*sch.get_loops(depthwise)[:2]))
    dwrite = sch.cache_write(depthwise, 0, "local")
    sch.reverse_compute_inline(activation)
    sch.reverse_compute_at(dwrite, dxo)
    sch.unroll(drx)
    sch.unroll(dxi)
    sch.vectorize(dcl)
    sch.vectorize(sch.get_loops(sch.decompose_reduction(depthwise, dry))[-1])
    sch.vectorize(sch.split(sch.get_loops(dwrite)[-1], [None, lanes])[1])
    return sch.mod


def expected(arrays: list) -> object:
    """The block in NumPy."""
    import numpy as np

    x, wd, bd, wp, bp = arrays
    size, channels = x.shape[1], x.shape[3]
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    dw = sum(
        padded[:, i : i + size, j : j + size, :] * wd[i, j] for i in range(3) for j in range(3)
    )
    act = np.maximum(dw + bd, 0).reshape(-1, channels)
    return np.maximum(act @ wp + bp, 0).reshape(1, size, size, -1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--rows", type=int, default=7, help="pixels of each register tile")
    parser.add_argument("--vectors", type=int, default=2, help="vectors of the product's tile")
    parser.add_argument("--band", type=int, default=1, help="image rows per fused band")
    args = parser.parse_args()

    import numpy as np

    from mlc_jupyter.compilation import conv_schedule, tir_pipeline
    from mlc_jupyter.compilation.targets import describe_target, resolve_target
    from mlc_jupyter.measure.turns import samples_in_turns
    from mlc_jupyter.tvm_compat import compile as tvm_compile
    from mlc_jupyter.tvm_compat import tvm

    target = resolve_target(None)
    lanes = conv_schedule.vector_unit(target).lanes
    print(f"target {describe_target(target)}; tile {args.rows} pixels x {args.vectors} vectors "
          f"of {lanes}, bands of {args.band} rows; {args.rounds} rounds in turns, warm")  # fmt: skip
    rng, device = np.random.default_rng(0), tvm().cpu()
    print(f"{'block':>22} {'apart us':>9} {'fused us':>9} {'fused/apart':>12} {'max rel err':>12}")
    for size, channels, outputs in SHAPES:
        tensors = computation(size, channels, outputs)
        arrays = [
            (rng.standard_normal([int(d) for d in t.shape]) * 0.2).astype("float32")
            for t in tensors[:-1]
        ]
        want = expected(arrays)
        samplers, errors = [], []
        for fused in (False, True):
            mod = scheduled(tensors, fused, args.rows, args.vectors, args.band, lanes)
            library = tvm_compile(mod, target, tir_pipeline(target)).mod
            args_ = [tvm().runtime.tensor(a) for a in arrays]
            args_.append(tvm().runtime.tensor(np.zeros(want.shape, "float32")))
            library["main"](*args_)
            errors.append(float(np.abs(args_[-1].numpy() - want).max() / np.abs(want).max()))
            timer = library.time_evaluator("main", device, number=100)
            samplers.append(lambda timer=timer, a=args_: float(timer(*a).mean))
        apart, fused_ = (statistics.median(s) for s in samples_in_turns(samplers, args.rounds))
        print(f"{f'{size}x{size}x{channels} -> {outputs}':>22} {apart * 1e6:9.1f} "
              f"{fused_ * 1e6:9.1f} {fused_ / apart:12.3f} {max(errors):12.1e}")  # fmt: skip


if __name__ == "__main__":
    main()
