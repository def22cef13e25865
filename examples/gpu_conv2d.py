"""TE's ``opt_conv_cuda`` recipe: a 3x3 convolution with padding, in the HWCN layout.

``B[y, x, f, n] = sum_{ry, rx, rc} Apad[y + ry, x + rx, rc, n] * W[ry, rx, rc, f]``, batch
innermost so that a block's threads read neighbouring images with 16-byte loads. The padding
stage is inlined (its ``if_then_else`` becomes the guard of the shared-memory fill). Each block
computes 64 output channels x 64 images of one output pixel, 8x8 threads each holding 2x2
virtual threads of 4x4 results in registers; for every (ry, rx) and every 8 input channels,
tiles of the input and of the weights are staged in shared memory (float4 loads) and read
into registers per input channel.
"""

from __future__ import annotations

import schedlang as sl


def conv2d(batch, in_channel, out_channel, size, kernel=3, pad=1):
    """``(A, W, B)`` for a stride-1 convolution that keeps the spatial size."""
    a = sl.placeholder((size, size, in_channel, batch), name="A")
    w = sl.placeholder((kernel, kernel, in_channel, out_channel), name="W")
    padded = size + 2 * pad
    apad = sl.compute(
        (padded, padded, in_channel, batch),
        lambda yy, xx, cc, nn: sl.if_then_else(
            sl.all(yy >= pad, yy - pad < size, xx >= pad, xx - pad < size),
            a[yy - pad, xx - pad, cc, nn],
            0.0,
        ),
        name="Apad",
    )
    rc = sl.reduce_axis((0, in_channel), name="rc")
    ry = sl.reduce_axis((0, kernel), name="ry")
    rx = sl.reduce_axis((0, kernel), name="rx")
    out = size + 2 * pad - kernel + 1
    b = sl.compute(
        (out, out, out_channel, batch),
        lambda yy, xx, ff, nn: sl.sum(
            apad[yy + ry, xx + rx, rc, nn] * w[ry, rx, rc, ff], axis=[ry, rx, rc]
        ),
        name="B",
    )
    return a, w, b


def schedule(a, w, b, tile=4, num_thread=8, vthread=2, step=8) -> sl.Schedule:
    s = sl.create_schedule(b.op)
    apad = b.op.input_tensors[0]
    s[apad].compute_inline()
    aa = s.cache_read(apad, "shared", [b])
    ww = s.cache_read(w, "shared", [b])
    al = s.cache_read(aa, "local", [b])
    wl = s.cache_read(ww, "local", [b])
    bl = s.cache_write(b, "local")
    block_factor = tile * num_thread * vthread

    hi, wi, fi, ni = s[b].op.axis
    bz = s[b].fuse(hi, wi)
    by, fi = s[b].split(fi, factor=block_factor)
    bx, ni = s[b].split(ni, factor=block_factor)
    tyz, fi = s[b].split(fi, nparts=vthread)
    txz, ni = s[b].split(ni, nparts=vthread)
    ty, fi = s[b].split(fi, nparts=num_thread)
    tx, ni = s[b].split(ni, nparts=num_thread)
    s[b].reorder(bz, by, bx, tyz, txz, ty, tx, fi, ni)
    for axis, tag in (
        (bz, "blockIdx.z"),
        (by, "blockIdx.y"),
        (bx, "blockIdx.x"),
        (tyz, "vthread"),
        (txz, "vthread"),
        (ty, "threadIdx.y"),
        (tx, "threadIdx.x"),
    ):
        s[b].bind(axis, sl.thread_axis(tag))

    s[bl].compute_at(s[b], tx)
    yi, xi, fi, ni = s[bl].op.axis
    ry, rx, rc = s[bl].op.reduce_axis
    rco, rci = s[bl].split(rc, factor=step)
    s[bl].reorder(rco, ry, rx, rci, fi, ni)
    s[aa].compute_at(s[bl], rx)
    s[ww].compute_at(s[bl], rx)
    s[al].compute_at(s[bl], rci)
    s[wl].compute_at(s[bl], rci)

    for cache in (aa, ww):
        _, _, ci, last = s[cache].op.axis
        cty, ci = s[cache].split(ci, nparts=num_thread)
        ctx, last = s[cache].split(last, nparts=num_thread)
        _, lanes = s[cache].split(last, factor=4)
        s[cache].bind(cty, sl.thread_axis("threadIdx.y"))
        s[cache].bind(ctx, sl.thread_axis("threadIdx.x"))
        s[cache].vectorize(lanes)
    return s


def build(batch, in_channel, out_channel, size, target: str = "cuda", **options):
    a, w, b = conv2d(batch, in_channel, out_channel, size)
    return sl.build(schedule(a, w, b, **options), [a, w, b], target=target)
