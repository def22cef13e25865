"""A 3x3 float16 convolution on Hopper's warpgroup tensor cores (``wgmma``, sm_90a), as an
implicit GEMM.

The layout puts images and channels last, so that every tile the instruction takes is the
last two dimensions of a tensor (TVM's ``hwnc`` tensor-core convolutions do the same):

- data ``A[h, w, n, c]``, weights ``W[kh, kw, c, o]``, output ``Conv[h, w, n, o]``;
- ``Conv[h, w, n, o] = sum float32(Apad[h + kh, w + kw, n, c]) * float32(W[kh, kw, c, o])``
  over ``kh, kw, c``: for each output pixel, a GEMM of images x channels.

The schedule (`gpu_gemm_wgmma`'s, per pixel): blocks of ``block_rows`` images x
``block_cols`` output channels per output pixel row (``blockIdx.z`` the row, ``blockIdx.y``
the column and image block, ``blockIdx.x`` the channel block), 64 images per warpgroup
(``threadIdx.z``); the reduction is one loop over ``kh, kw`` and the input channels in steps of
`step` (fused: ``s[acc].fuse(kh, kw, c.outer)``), along which the data and weight tiles are
staged in shared memory, swizzled, `stages` - 1 steps ahead. The padding is inlined into the
data's copy: a row of the image that lies outside it is copied as zeros (the asynchronous
copy's zero fill), so no padded tensor is ever written.
"""

from __future__ import annotations

import schedlang as sl
from examples.gpu_gemm_wgmma import GROUP_ROWS, K_TILE, stage_tile


def conv2d(height, width, batch, in_channels, out_channels, kernel=3, pad=1, out_dtype="float16"):
    """``(A, W, Conv)`` for a stride-1 convolution that keeps the spatial size, float16 data
    summed in float32 and stored as `out_dtype`."""
    a = sl.placeholder((height, width, batch, in_channels), "float16", name="A")
    w = sl.placeholder((kernel, kernel, in_channels, out_channels), "float16", name="W")
    apad = sl.compute(
        (height + 2 * pad, width + 2 * pad, batch, in_channels),
        lambda h, x, n, c: sl.if_then_else(
            sl.all(h >= pad, h - pad < height, x >= pad, x - pad < width),
            a[h - pad, x - pad, n, c],
            sl.const(0.0, "float16"),
        ),
        name="Apad",
    )
    rc = sl.reduce_axis((0, in_channels), name="rc")
    kh = sl.reduce_axis((0, kernel), name="kh")
    kw = sl.reduce_axis((0, kernel), name="kw")
    out_h, out_w = height + 2 * pad - kernel + 1, width + 2 * pad - kernel + 1
    acc = sl.compute(
        (out_h, out_w, batch, out_channels),
        lambda h, x, n, o: sl.sum(
            apad[h + kh, x + kw, n, rc].astype("float32") * w[kh, kw, rc, o].astype("float32"),
            axis=[kh, kw, rc],
        ),
        name="Conv" if out_dtype == "float32" else "acc",
    )
    if out_dtype == "float32":
        return a, w, acc
    conv = sl.compute(
        (out_h, out_w, batch, out_channels),
        lambda h, x, n, o: acc[h, x, n, o].astype(out_dtype),
        name="Conv",
    )
    return a, w, conv


def schedule(
    a: sl.Tensor,
    w: sl.Tensor,
    conv: sl.Tensor,
    block_rows: int = 128,
    block_cols: int = 128,
    step: int = 64,
    stages: int = 3,
    tma: bool = False,
    runs: int = 0,
    persistent: int = 0,
    tma_store: bool = False,
) -> sl.Schedule:
    """The schedule above: `block_rows` a multiple of 64, `block_cols` a multiple of 8 up to
    256 (of 64 above 64), `step` a multiple of 64 dividing the input channels. With `tma`, the
    copy engine fills the tiles from a producer warp, and its zero fill outside the image is
    the padding (``pipeline(stages, tma=True)``). With `runs`, the output columns are cut
    in that many runs, and a block takes the columns of its run in turn (``blockIdx.y`` the
    run, a serial loop its columns): with `tma`, the producer fills the next column's first
    stages while the consumers store the last one's results. With `persistent`, that many
    blocks (one per multiprocessor) take all the tiles (row, column, image block, channel
    block, fused) in turn, one pipeline across a block's tiles. With `tma_store`, the copy
    engine stores each warpgroup's results from shared memory, in the background."""
    s = sl.create_schedule(conv.op)
    first = conv.op.input_tensors[0]
    product = conv if first.op.name == "Apad" else first
    apad = product.op.input_tensors[0]
    s[apad].compute_inline()
    a_shared = s.cache_read(apad, "shared", [product])
    w_shared = s.cache_read(w, "shared", [product])
    if product is conv:
        acc = s.cache_write(conv, "wgmma.accumulator")
    else:
        acc = product
        s[acc].set_scope("wgmma.accumulator")
    groups = block_rows // GROUP_ROWS

    h, x, n, o = conv.op.axis
    bn, n = s[conv].split(n, factor=block_rows)
    bo, o = s[conv].split(o, factor=block_cols)
    gn, n = s[conv].split(n, factor=GROUP_ROWS)
    if persistent:  # blocks over all the tiles, each taking its share in turn
        s[conv].reorder(h, x, bn, bo, gn, n, o)
        block, _ = s[conv].split(s[conv].fuse(h, x, bn, bo), nparts=persistent)
        s[conv].bind(block, sl.thread_axis("blockIdx.x"))
    elif runs:  # blocks over runs of columns, each taking its columns in turn
        s[conv].bind(h, sl.thread_axis("blockIdx.z"))
        xo, xi = s[conv].split(x, nparts=runs)
        s[conv].reorder(h, xo, bn, bo, xi, gn, n, o)
        s[conv].bind(xo, sl.thread_axis("blockIdx.y"))
        s[conv].bind(s[conv].fuse(bn, bo), sl.thread_axis("blockIdx.x"))
    else:
        s[conv].bind(h, sl.thread_axis("blockIdx.z"))
        s[conv].reorder(h, x, bn, bo, gn, n, o)
        s[conv].bind(s[conv].fuse(x, bn), sl.thread_axis("blockIdx.y"))
        s[conv].bind(bo, sl.thread_axis("blockIdx.x"))
    s[conv].bind(gn, sl.thread_axis("threadIdx.z"))
    s[conv].tensorize(n, sl.intrin.store_matrix(n=block_cols, m=GROUP_ROWS, tma=tma_store))

    s[acc].compute_at(s[conv], gn)
    ah, ax, an, ao = s[acc].op.axis
    kh, kw, rc = s[acc].op.reduce_axis
    rco, rci = s[acc].split(rc, factor=step)
    kio, ki = s[acc].split(rci, factor=K_TILE)
    k = s[acc].fuse(kh, kw, rco)  # one loop of steps, pipelined across the kernel's taps
    s[acc].reorder(k, kio, ah, ax, an, ao, ki)
    s[acc].tensorize(an, sl.intrin.wgmma(n=block_cols))

    for staged in (a_shared, w_shared):
        stage_tile(s, staged, s[acc], k, groups, stages, tma)
    return s


def build(height, width, batch, in_channels, out_channels, out_dtype="float16", **options):
    """The convolution built for a Hopper GPU (sm_90a)."""
    a, w, c = conv2d(height, width, batch, in_channels, out_channels, out_dtype=out_dtype)
    return sl.build(schedule(a, w, c, **options), [a, w, c], target="cuda")
