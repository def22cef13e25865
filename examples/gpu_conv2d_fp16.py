"""TE's ``opt_conv_tensorcore`` recipe: a 3x3 float16 convolution on the tensor cores.

The layout is TE's: images and channels in blocks of 16, the 16 x 16 block innermost, so
that every tile the tensor cores take is the last two dimensions of a tensor:

- data ``A[n, h, w, i, nn, ii]`` (image ``16 n + nn``, input channel ``16 i + ii``),
- weights ``W[kh, kw, i, o, ii, oo]`` (input channel ``16 i + ii``, output ``16 o + oo``),
- output ``Conv[n, h, w, o, nn, oo]``, float32:
  ``sum float32(Apad[n, h + kh, w + kw, i, nn, ii]) * float32(W[kh, kw, i, o, ii, oo])``
  over ``i, kh, kw, ii``.

The schedule, from the outside in: one block per output pixel (``blockIdx.z``) and group of
images and output channels (``blockIdx.x/y``); warps in a grid (``threadIdx.y/z``), each with
``warp_rows x warp_cols`` tiles of 16 x 16 outputs in accumulator fragments; per kernel row
``kh`` and ``chunk`` blocks of input channels, the block stages its data and weights in shared
memory (the padding inlined into the data's copy, the 32 lanes of ``threadIdx.x`` copying);
per ``kw``, each warp loads its fragments and runs its mma tiles; at the end it stores them.
"""

from __future__ import annotations

import schedlang as sl

BLOCK = 16


def conv2d(batch, height, width, in_channels, out_channels, kernel=3, pad=1):
    """``(A, W, Conv)`` for a stride-1 convolution that keeps the spatial size; `batch` and
    the channel counts are multiples of 16."""
    data = (batch // BLOCK, height, width, in_channels // BLOCK, BLOCK, BLOCK)
    weights = (kernel, kernel, in_channels // BLOCK, out_channels // BLOCK, BLOCK, BLOCK)
    a = sl.placeholder(data, "float16", name="A")
    w = sl.placeholder(weights, "float16", name="W")
    apad = sl.compute(
        (batch // BLOCK, height + 2 * pad, width + 2 * pad, in_channels // BLOCK, BLOCK, BLOCK),
        lambda n, h, x, i, nn, ii: sl.if_then_else(
            sl.all(h >= pad, h - pad < height, x >= pad, x - pad < width),
            a[n, h - pad, x - pad, i, nn, ii],
            sl.const(0.0, "float16"),
        ),
        name="Apad",
    )
    ic = sl.reduce_axis((0, in_channels // BLOCK), name="ic")
    kh = sl.reduce_axis((0, kernel), name="kh")
    kw = sl.reduce_axis((0, kernel), name="kw")
    ii = sl.reduce_axis((0, BLOCK), name="ii")
    out_h, out_w = height + 2 * pad - kernel + 1, width + 2 * pad - kernel + 1
    conv = sl.compute(
        (batch // BLOCK, out_h, out_w, out_channels // BLOCK, BLOCK, BLOCK),
        lambda n, h, x, o, nn, oo: sl.sum(
            apad[n, h + kh, x + kw, ic, nn, ii].astype("float32")
            * w[kh, kw, ic, o, ii, oo].astype("float32"),
            axis=[ic, kh, kw, ii],
        ),
        name="Conv",
    )
    return a, w, conv


def schedule(
    a: sl.Tensor,
    w: sl.Tensor,
    conv: sl.Tensor,
    block_row_warps: int = 4,
    block_col_warps: int = 2,
    warp_row_tiles: int = 2,
    warp_col_tiles: int = 4,
    chunk: int = 2,
    swizzle: bool = False,
) -> sl.Schedule:
    """TE's schedule with its parameter names; `swizzle` lays the shared tiles out swizzled
    (their 32-byte rows put the 8 rows an ldmatrix reads in 4 bank groups otherwise)."""
    s = sl.create_schedule(conv.op)
    apad = conv.op.input_tensors[0]
    s[apad].compute_inline()
    a_shared = s.cache_read(apad, "shared", [conv])
    w_shared = s.cache_read(w, "shared", [conv])
    a_frag = s.cache_read(a_shared, "wmma.matrix_a", [conv])
    w_frag = s.cache_read(w_shared, "wmma.matrix_b", [conv])
    acc = s.cache_write(conv, "wmma.accumulator")

    n, h, x, o, nn, oo = conv.op.axis
    block_k = s[conv].fuse(h, x)
    n, ni = s[conv].split(n, factor=warp_row_tiles)
    block_i, n = s[conv].split(n, factor=block_row_warps)
    o, oi = s[conv].split(o, factor=warp_col_tiles)
    block_j, o = s[conv].split(o, factor=block_col_warps)
    s[conv].reorder(block_k, block_i, block_j, n, o, ni, oi, nn, oo)
    s[conv].bind(block_k, sl.thread_axis("blockIdx.z"))
    s[conv].bind(block_i, sl.thread_axis("blockIdx.x"))
    s[conv].bind(block_j, sl.thread_axis("blockIdx.y"))
    s[conv].bind(n, sl.thread_axis("threadIdx.y"))
    s[conv].bind(o, sl.thread_axis("threadIdx.z"))
    s[conv].tensorize(nn, sl.intrin.store_matrix())

    s[acc].compute_at(s[conv], o)
    n, h, x, o, nnf, oof = s[acc].op.axis
    ic, kh, kw, ii = s[acc].op.reduce_axis
    ko, ki = s[acc].split(ic, factor=chunk)
    s[acc].reorder(ko, kh, ki, kw, n, o, nnf, oof, ii)
    s[acc].tensorize(nnf, sl.intrin.mma_sync())

    for frag, scope in ((a_frag, "wmma.matrix_a"), (w_frag, "wmma.matrix_b")):
        s[frag].compute_at(s[acc], kw)
        s[frag].tensorize(s[frag].op.axis[-2], sl.intrin.load_matrix(scope))

    if swizzle:
        s[a_shared].swizzle(128)
        s[w_shared].swizzle(128)
    s[a_shared].compute_at(s[acc], kh)
    n, h, x, i, nn, ii = s[a_shared].op.axis
    ty, rest = s[a_shared].split(n, nparts=block_row_warps)
    tz, rest = s[a_shared].split(rest, nparts=block_col_warps)
    t = s[a_shared].fuse(nn, ii)
    _, tx = s[a_shared].split(t, factor=32)
    s[a_shared].bind(ty, sl.thread_axis("threadIdx.y"))
    s[a_shared].bind(tz, sl.thread_axis("threadIdx.z"))
    s[a_shared].bind(tx, sl.thread_axis("threadIdx.x"))

    s[w_shared].compute_at(s[acc], kh)
    kh, kw, ic, o, ii, oo = s[w_shared].op.axis
    ty, rest = s[w_shared].split(o, nparts=block_row_warps)
    tz, rest = s[w_shared].split(rest, nparts=block_col_warps)
    t = s[w_shared].fuse(ii, oo)
    tx, lanes = s[w_shared].split(t, nparts=32)
    s[w_shared].bind(ty, sl.thread_axis("threadIdx.y"))
    s[w_shared].bind(tz, sl.thread_axis("threadIdx.z"))
    s[w_shared].bind(tx, sl.thread_axis("threadIdx.x"))
    s[w_shared].vectorize(lanes)
    return s


def build(batch, height, width, in_channels, out_channels, target: str = "cuda", **options):
    a, w, conv = conv2d(batch, height, width, in_channels, out_channels)
    return sl.build(schedule(a, w, conv, **options), [a, w, conv], target=target)
