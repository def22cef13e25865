"""A 3x3 convolution by Winograd's minimal filtering, F(m x m, 3 x 3), as four stages.

The direct convolution of `examples.gpu_conv2d` does 9 multiply-adds per input channel and
output; Winograd's algorithm computes each m x m tile of outputs from an (m + 2) x (m + 2)
tile of inputs with (m + 2)^2 multiplies per channel, 4x fewer for m = 4 (Lavin and Gray,
"Fast Algorithms for Convolutional Neural Networks", 2016). In the HWCN layout of TE's
``opt_conv_cuda`` (batch innermost), with ``alpha = m + 2`` and tiles ``p = (ty, tx, n)``:

- ``U[e, u, c, k] = sum G[e, ry] W[ry, rx, c, k] G[u, rx]``: the filters, transformed;
- ``V[e, u, c, p] = sum Bt[e, r1] Apad[m ty + r1, m tx + r2, c, n] Bt[u, r2]``: the input
  tiles, as two products (``Vh`` sums over r1, computed per thread in registers);
- ``M[e, u, k, p] = sum_c U[e, u, c, k] V[e, u, c, p]``: alpha^2 independent matrix products,
  which carry almost all the work and run with the GEMM schedule of `examples.gpu_gemm`;
- ``B[y, x, k, n] = sum At[y % m, e] M[e, u, k, p(y // m, x // m, n)] At[x % m, u]``.

The matrices G, Bt and At are constants (Toom-Cook interpolation at 0, +-1, +-2, ..., made
here in numpy and checked exact); they enter the algorithm as ``if_then_else`` chains over
their indices, as TE's ``const_matrix`` does, so that once the loops over them are unrolled
every coefficient is a literal. All four stages are built into one kernel module; a call runs
them in order.
"""

from __future__ import annotations

import numpy as np

import schedlang as sl

from . import gpu_gemm

POINTS = (0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5)  # Toom-Cook points, then infinity


def matrices(m: int, r: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(At, G, Bt)`` of F(m, r): ``y = At [(G g) * (Bt d)]`` is the correlation of `d`
    (m + r - 1 values) with `g` (r values) for every `d` and `g`."""
    alpha = m + r - 1
    points = np.array(POINTS[: alpha - 1])
    a = np.zeros((alpha, m))
    g = np.zeros((alpha, r))
    for i, f in enumerate(points):
        a[i] = f ** np.arange(m)
        g[i] = f ** np.arange(r) / np.prod([f - h for h in points if h != f])
    a[-1, -1] = g[-1, -1] = 1.0  # the point at infinity: leading coefficients
    # Bt solves sum_i A[i, o] G[i, q] Bt[i, p] = [p == o + q]: one linear system per column p.
    system = np.einsum("io,iq->oqi", a, g).reshape(m * r, alpha)
    shifts = np.zeros((m * r, alpha))
    for o in range(m):
        for q in range(r):
            shifts[o * r + q, o + q] = 1.0
    bt, *_ = np.linalg.lstsq(system, shifts, rcond=None)
    if not np.allclose(system @ bt, shifts, atol=1e-9):
        raise ValueError(f"no exact F({m}, {r}) for the points {list(points)}")
    return a.T, g, bt


def const_matrix(values: np.ndarray):
    """``(i, j) -> values[i, j]`` as an expression of the indices (a chain of if_then_else)."""

    def entry(i, j):
        expr = sl.const(0.0, "float32")
        for (a, b), v in np.ndenumerate(values):
            if v != 0.0:
                expr = sl.if_then_else(sl.all(i == a, j == b), sl.const(float(v), "float32"), expr)
        return expr

    return entry


def winograd(batch, in_channel, out_channel, size, m: int = 4):
    """``(A, W, B)`` (HWCN input, (ry, rx, c, k) filters, HWCN output; 3x3, padding 1) and the
    stages ``(U, V, M)``."""
    at_np, g_np, bt_np = matrices(m)
    alpha = m + 2
    at_m, g_m, bt_m = const_matrix(at_np), const_matrix(g_np), const_matrix(bt_np)
    tiles = -(-size // m)
    a = sl.placeholder((size, size, in_channel, batch), name="A")
    w = sl.placeholder((3, 3, in_channel, out_channel), name="W")
    apad = sl.compute(
        (tiles * m + 2, tiles * m + 2, in_channel, batch),
        lambda yy, xx, cc, nn: sl.if_then_else(
            sl.all(yy >= 1, yy - 1 < size, xx >= 1, xx - 1 < size),
            a[yy - 1, xx - 1, cc, nn],
            0.0,
        ),
        name="Apad",
    )
    ry = sl.reduce_axis((0, 3), name="ry")
    rx = sl.reduce_axis((0, 3), name="rx")
    u = sl.compute(
        (alpha, alpha, in_channel, out_channel),
        lambda e, v, c, k: sl.sum(g_m(e, ry) * w[ry, rx, c, k] * g_m(v, rx), axis=[ry, rx]),
        name="U",
    )
    r1 = sl.reduce_axis((0, alpha), name="r1")
    r2 = sl.reduce_axis((0, alpha), name="r2")
    n_tiles = tiles * tiles * batch
    # Bt d Bt^T as two products (2 alpha^3 multiply-adds per tile, not alpha^4)
    half = sl.compute(
        (alpha, alpha, in_channel, n_tiles),
        lambda e, col, c, p: sl.sum(
            bt_m(e, r1)
            * apad[(p // (tiles * batch)) * m + r1, (p // batch) % tiles * m + col, c, p % batch],
            axis=r1,
        ),
        name="Vh",
    )
    v = sl.compute(
        (alpha, alpha, in_channel, n_tiles),
        lambda e, q, c, p: sl.sum(half[e, r2, c, p] * bt_m(q, r2), axis=r2),
        name="V",
    )
    rc = sl.reduce_axis((0, in_channel), name="rc")
    mm = sl.compute(
        (alpha, alpha, out_channel, n_tiles),
        lambda e, q, k, p: sl.sum(u[e, q, rc, k] * v[e, q, rc, p], axis=rc),
        name="M",
    )
    e1 = sl.reduce_axis((0, alpha), name="e1")
    e2 = sl.reduce_axis((0, alpha), name="e2")
    b = sl.compute(
        (size, size, out_channel, batch),
        lambda y, x, k, n: sl.sum(
            at_m(y % m, e1)
            * mm[e1, e2, k, ((y // m) * tiles + x // m) * batch + n]
            * at_m(x % m, e2),
            axis=[e1, e2],
        ),
        name="B",
    )
    return a, w, b, (u, v, mm)


def schedule(b, stages, m: int = 4, per_block: int = 256, **gemm_options) -> sl.Schedule:
    u, v, mm = stages
    s = sl.create_schedule(b.op)
    _transform(s, u, per_block)
    half = v.op.input_tensors[0]
    _transform(s, v, per_block, staged=(half.op.input_tensors[0], half))
    gpu_gemm.schedule_into(s, u, v, mm, **gemm_options)
    _output(s, b, mm, m, per_block)
    return s


def _transform(s: sl.Schedule, t: sl.Tensor, threads: int, staged=()) -> None:
    """One thread per (c, column): all alpha^2 outputs of its tile accumulated in registers,
    unrolled so that the constants fold; neighbouring threads take neighbouring columns
    (coalesced). The `staged` stages (for V, the padded input tile and its first product)
    are computed per thread in registers first."""
    local = s.cache_write(t, "local")
    e, q, c, col = t.op.axis
    s[t].reorder(c, col, e, q)
    fused = s[t].fuse(c, col)
    bx, tx = s[t].split(fused, factor=threads)
    s[t].bind(bx, sl.thread_axis("blockIdx.x"))
    s[t].bind(tx, sl.thread_axis("threadIdx.x"))
    s[t].unroll(e)
    s[t].unroll(q)
    _in_registers(s, local, s[t], tx)
    for stage in staged:
        s[stage].set_scope("local")
        _in_registers(s, stage, s[t], tx)


def _output(s: sl.Schedule, b: sl.Tensor, mm: sl.Tensor, m: int, threads: int) -> None:
    """A thread per (tile, k, n): its alpha^2 values of M read into registers once, its
    m x m outputs accumulated in registers and stored once."""
    local = s.cache_write(b, "local")
    y, x, k, n = b.op.axis
    yo, yi = s[b].split(y, factor=m)
    xo, xi = s[b].split(x, factor=m)
    s[b].reorder(yo, xo, k, n, yi, xi)
    bx, tx = s[b].split(s[b].fuse(k, n), factor=threads)
    s[b].bind(yo, sl.thread_axis("blockIdx.z"))
    s[b].bind(xo, sl.thread_axis("blockIdx.y"))
    s[b].bind(bx, sl.thread_axis("blockIdx.x"))
    s[b].bind(tx, sl.thread_axis("threadIdx.x"))
    s[b].unroll(yi)
    s[b].unroll(xi)
    _in_registers(s, local, s[b], tx)
    _in_registers(s, s.cache_read(mm, "local", [local]), s[b], tx)


def _in_registers(s: sl.Schedule, t: sl.Tensor, at: sl.Stage, thread) -> None:
    """`t` computed per thread at loop `thread` of `at`, every loop unrolled (a constant
    index into each of its registers)."""
    s[t].compute_at(at, thread)
    for axis in (*s[t].op.axis, *s[t].op.reduce_axis):
        s[t].unroll(axis)


def build(
    batch, in_channel, out_channel, size, m: int = 4, target: str = "cuda -min-blocks-per-sm=2"
):
    """The four stages built into one module; the GEMM's bound on registers (`gpu_gemm.build`)
    suits the transforms too."""
    a, w, b, stages = winograd(batch, in_channel, out_channel, size, m)
    return sl.build(schedule(b, stages, m), [a, w, b], target=target)
