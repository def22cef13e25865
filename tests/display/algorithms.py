"""Small algorithms and schedules the display tests draw and compare."""

from __future__ import annotations

import schedlang as sl


def matmul():
    """A, B, C = A @ B over symbolic sizes M, N, K."""
    m, n, k_size = sl.var("M"), sl.var("N"), sl.var("K")
    a = sl.placeholder((m, k_size), name="A")
    b = sl.placeholder((k_size, n), name="B")
    k = sl.reduce_axis((0, k_size), name="k")
    c = sl.compute((m, n), lambda i, j: sl.sum(a[i, k] * b[k, j], axis=k), name="C")
    return a, b, c


def cpu_tiled(c, tile: int = 8):
    """Row blocks of `tile` in parallel, columns vectorized, the reduction unrolled by 2."""
    s = sl.create_schedule(c)
    yo, xo, yi, xi = s[c].tile(c.op.axis[0], c.op.axis[1], tile, tile)
    ko, ki = s[c].split(s[c].op.reduce_axis[0], factor=2)
    s[c].reorder(yo, xo, ko, yi, ki, xi)
    s[c].parallel(yo)
    s[c].unroll(ki)
    s[c].vectorize(xi)
    return s


def gpu_shared(a, b, c, tile: int = 16):
    """TE's shared-memory matmul: `tile` x `tile` blocks of threads, A and B staged per k step."""
    s = sl.create_schedule(c)
    aa = s.cache_read(a, "shared", [c])
    bb = s.cache_read(b, "shared", [c])
    cl = s.cache_write(c, "local")
    by, bx, ty, tx = s[c].tile(c.op.axis[0], c.op.axis[1], tile, tile)
    for axis, tag in (
        (by, "blockIdx.y"),
        (bx, "blockIdx.x"),
        (ty, "threadIdx.y"),
        (tx, "threadIdx.x"),
    ):
        s[c].bind(axis, sl.thread_axis(tag))
    s[cl].compute_at(s[c], tx)
    ko, _ = s[cl].split(s[cl].op.reduce_axis[0], factor=tile)
    for cache in (aa, bb):
        s[cache].compute_at(s[cl], ko)
        y, x = s[cache].op.axis
        s[cache].bind(y, sl.thread_axis("threadIdx.y"))
        s[cache].bind(x, sl.thread_axis("threadIdx.x"))
    return s, aa, bb
