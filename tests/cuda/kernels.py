"""GPU schedules the CUDA tests build: each returns ``(schedule, inputs, outputs)``.

The shared-memory GEMM and the TE recipes come from the SIMT-interpreter tests, so the same
schedules are checked by the interpreter, as PTX by ptxas, and on a GPU.
"""

from __future__ import annotations

import schedlang as sl
from schedlang.demo_cuda import te_gpu_gemm
from tests.schedule.test_gpu_schedules import bind, gemm_shared_local, matmul


def spread(s, t, lanes: int = 1, threads: int = 128) -> None:
    """`t`'s one axis over blocks of `threads` threads, `lanes` adjacent elements a thread as
    a vector when more than one."""
    rest, lane = s[t].split(t.op.axis[0], factor=lanes)
    outer, inner = s[t].split(rest, factor=threads)
    s[t].bind(outer, sl.thread_axis("blockIdx.x"))
    s[t].bind(inner, sl.thread_axis("threadIdx.x"))
    if lanes > 1:
        s[t].vectorize(lane)


def vector_add(n=None, factor: int = 64):
    n = sl.var("n") if n is None else n
    a = sl.placeholder((n,), name="A")
    b = sl.placeholder((n,), name="B")
    c = sl.compute((n,), lambda i: a[i] + b[i], name="C")
    s = sl.create_schedule(c)
    xo, xi = s[c].split(c.op.axis[0], factor=factor)
    bind(s, c, (xo, "blockIdx.x"), (xi, "threadIdx.x"))
    return s, [a, b], [c]


def row_sum_rfactor(m=5, n=37, factor: int = 8):
    """Partial sums per thread in shared memory, combined by one thread of each block."""
    a = sl.placeholder((m, n), name="A")
    k = sl.reduce_axis((0, n), name="k")
    r = sl.compute((m,), lambda i: sl.sum(a[i, k], axis=k), name="R")
    s = sl.create_schedule(r)
    _, ki = s[r].split(k, factor=factor)
    rf = s.rfactor(r, ki)
    bind(s, r, (s[r].op.axis[0], "blockIdx.x"))
    s[rf].compute_at(s[r], s[r].op.axis[0])
    bind(s, rf, (s[rf].op.axis[0], "threadIdx.x"))
    return s, [a], [r]


def gemm_shared(m=None, n=None, k=11):
    """Shared tiles of A and B refilled per k step, a local accumulator per thread."""
    a, b, c = matmul(sl.var("m") if m is None else m, sl.var("n") if n is None else n, k)
    s = sl.create_schedule(c)
    gemm_shared_local(s, a, b, c, tile=8, threads=4, kf=4)
    return s, [a, b], [c]


def gemm_registers(size: int = 64):
    """32x32 block tiles, 8x8 threads each computing 4x4 outputs in registers (unrolled)."""
    a, b, c = matmul(size, size, size)
    s = sl.create_schedule(c)
    _, _, cl = gemm_shared_local(s, a, b, c, tile=32, threads=8, kf=8)
    s[cl].unroll(s[cl].op.axis[0])
    s[cl].unroll(s[cl].op.axis[1])
    return s, [a, b], [c]


def gemm_double_buffered(m=None, n=None, k=23):
    """The shared/local GEMM with both tiles double-buffered (the next k step's tile is filled
    while the current one is read)."""
    a, b, c = matmul(sl.var("m") if m is None else m, sl.var("n") if n is None else n, k)
    s = sl.create_schedule(c)
    aa, bb, _ = gemm_shared_local(s, a, b, c, tile=8, threads=4, kf=4)
    s[aa].double_buffer()
    s[bb].double_buffer()
    return s, [a, b], [c]


def te_gemm(m=37, n=29, k=13):
    a, b, c = matmul(m, n, k)
    s = sl.create_schedule(c)
    te_gpu_gemm(s, a, b, c, num_thread=4, scale=2, vt=2, kf=4)
    return s, [a, b], [c]


def te_gemm_64(size=512):
    """TE's recipe at its own tile sizes: 64x64 block tiles, 8x8 threads, 2x2 virtual
    threads, each thread 8x8 outputs, k in steps of 8."""
    a, b, c = matmul(size, size, size)
    s = sl.create_schedule(c)
    te_gpu_gemm(s, a, b, c, num_thread=8, scale=4, vt=2, kf=8)
    return s, [a, b], [c]


def transpose(m=13, n=6):
    a = sl.placeholder((m, n), name="A")
    t = sl.compute((n, m), lambda i, j: a[j, i], name="T")
    s = sl.create_schedule(t)
    aa = s.cache_read(a, "shared", [t])
    by, bx, ty, tx = s[t].tile(t.op.axis[0], t.op.axis[1], 4, 4)
    bind(s, t, (by, "blockIdx.y"), (bx, "blockIdx.x"), (ty, "threadIdx.y"), (tx, "threadIdx.x"))
    s[aa].compute_at(s[t], bx)
    ay, ax = s[aa].op.axis
    bind(s, aa, (ay, "threadIdx.y"), (ax, "threadIdx.x"))
    return s, [a], [t]


def blur(n=19):
    a = sl.placeholder((n,), name="A")
    b = sl.compute((n - 1,), lambda i: a[i] + a[i + 1], name="B")
    c = sl.compute((n - 2,), lambda i: b[i] + b[i + 1], name="C")
    s = sl.create_schedule(c)
    bo, bi = s[c].split(c.op.axis[0], factor=4)
    bind(s, c, (bo, "blockIdx.x"), (bi, "threadIdx.x"))
    s[b].compute_at(s[c], bo)
    s[b].set_scope("shared")
    _, tx = s[b].split(b.op.axis[0], factor=4)
    bind(s, b, (tx, "threadIdx.x"))
    return s, [a], [c]


def two_kernels(n=None):
    """A producer computed at the root: two kernels, the first writing a global temporary."""
    n = sl.var("n") if n is None else n
    a = sl.placeholder((n,), name="A")
    b = sl.compute((n,), lambda i: a[i] * 2.0, name="B")
    c = sl.compute((n,), lambda i: b[n - 1 - i] + 1.0, name="C")
    s = sl.create_schedule(c)
    for t in (b, c):
        xo, xi = s[t].split(t.op.axis[0], factor=32)
        bind(s, t, (xo, "blockIdx.x"), (xi, "threadIdx.x"))
    return s, [a], [c]


def shared_rows(m=3, n=8192, threads=256):
    """``C[i, j] = A[i, n - 1 - j] + B[i, j]`` with whole rows of A and B staged in shared
    memory, one row per block: 2 * 4 * n bytes (64 KB at the default n, above the 48 KB a block
    may declare statically)."""
    a = sl.placeholder((m, n), name="A")
    b = sl.placeholder((m, n), name="B")
    c = sl.compute((m, n), lambda i, j: a[i, n - 1 - j] + b[i, j], name="C")
    s = sl.create_schedule(c)
    aa = s.cache_read(a, "shared", [c])
    bb = s.cache_read(b, "shared", [c])
    row, col = c.op.axis
    _, tx = s[c].split(col, factor=threads)
    bind(s, c, (row, "blockIdx.x"), (tx, "threadIdx.x"))
    for stage in (aa, bb):
        s[stage].compute_at(s[c], row)
        _, stx = s[stage].split(s[stage].op.axis[1], factor=threads)
        bind(s, stage, (stx, "threadIdx.x"))
    return s, [a, b], [c]


def row_reduce(m=7, n=37, threads=16, rows=4, reducer="sum", dtype="float32"):
    """TE's reduction recipe: partial results per thread (rfactor) combined across the
    `threads` threads of threadIdx.x (a block collective), `rows` rows per block on threadIdx.y.
    `reducer` is ``sum``, ``max`` or ``absmax`` (a custom one)."""
    a = sl.placeholder((m, n), dtype=dtype, name="A")
    k = sl.reduce_axis((0, n), name="k")
    combine = ABSMAX if reducer == "absmax" else getattr(sl, reducer)
    b = sl.compute((m,), lambda i: combine(a[i, k], axis=k), name="B")
    s = sl.create_schedule(b)
    _, ki = s[b].split(k, factor=threads)
    rf = s.rfactor(b, ki)
    xo, xi = s[b].split(s[b].op.axis[0], factor=rows)
    bind(s, b, (xo, "blockIdx.x"), (xi, "threadIdx.y"), (s[b].op.reduce_axis[0], "threadIdx.x"))
    s[rf].compute_at(s[b], s[b].op.reduce_axis[0])
    return s, [a], [b]


def column_reduce(m=6, n=37, threads=8, rows=4):
    """A reduce axis bound straight to threadIdx.y with rows on threadIdx.x: each group of
    threads is strided in the block (no warp holds one), one collective per k.outer step;
    `n` None is the symbolic size n."""
    n = sl.var("n") if n is None else n
    a = sl.placeholder((m, n), name="A")
    k = sl.reduce_axis((0, n), name="k")
    b = sl.compute((m,), lambda i: sl.sum(a[i, k], axis=k), name="B")
    s = sl.create_schedule(b)
    io, ii = s[b].split(b.op.axis[0], factor=rows)
    _, ki = s[b].split(k, factor=threads)
    bind(s, b, (io, "blockIdx.x"), (ii, "threadIdx.x"), (ki, "threadIdx.y"))
    return s, [a], [b]


ABSMAX = sl.comm_reducer(lambda x, y: sl.maximum(sl.abs(x), sl.abs(y)), lambda t: 0, "absmax")

# name: (schedule, arguments, the form `nvptx.allreduce.layout` gives its collective)
REDUCTIONS = {
    "warp": (row_reduce, (), "warp"),
    "warp_max": (row_reduce, (7, 37, 16, 4, "max"), "warp"),
    "warp_absmax": (row_reduce, (4, 19, 4, 2, "absmax"), "warp"),
    "warp_one": (row_reduce, (1, 1, 32, 1), "warp"),
    "warp_float64": (row_reduce, (5, 70, 8, 4, "sum", "float64"), "warp"),
    "warp_int32_max": (row_reduce, (5, 70, 8, 4, "max", "int32"), "warp"),
    "warp_partial_group": (row_reduce, (9, 23, 5, 4), "warp"),
    "warps": (row_reduce, (33, 1000, 128, 2), "warps"),
    "warps_max": (row_reduce, (3, 300, 64, 1, "max"), "warps"),
    "shared_rows": (row_reduce, (9, 100, 24, 4), "shared"),
    "shared_strided": (column_reduce, (), "shared"),
    "shared_symbolic": (column_reduce, (5, None), "shared"),
}


UNARY = (
    "exp",
    "exp2",
    "log",
    "log2",
    "sqrt",
    "rsqrt",
    "tanh",
    "sigmoid",
    "erf",
    "abs",
    "floor",
    "ceil",
    "round",
    "sin",
    "cos",
)


def math(name: str, dtype: str = "float32", n: int = 100):
    """``C = f(A)`` (``pow(A, 1.5)`` and ``fma(A, A, A)`` for the binary and ternary ones)."""
    a = sl.placeholder((n,), dtype=dtype, name="A")
    if name == "pow":
        c = sl.compute((n,), lambda i: sl.pow(a[i], sl.const(1.5, dtype)), name="C")
    elif name == "fma":
        c = sl.compute((n,), lambda i: sl.fma(a[i], a[i], a[i]), name="C")
    else:
        c = sl.compute((n,), lambda i: getattr(sl, name)(a[i]), name="C")
    s = sl.create_schedule(c)
    xo, xi = s[c].split(c.op.axis[0], factor=32)
    bind(s, c, (xo, "blockIdx.x"), (xi, "threadIdx.x"))
    return s, [a], [c]


SCHEDULES = {
    "vector_add": vector_add,
    "row_sum_rfactor": row_sum_rfactor,
    "gemm_shared": gemm_shared,
    "gemm_registers": gemm_registers,
    "gemm_double_buffered": gemm_double_buffered,
    "te_gemm": te_gemm,
    "te_gemm_64": te_gemm_64,
    "transpose": transpose,
    "blur": blur,
    "two_kernels": two_kernels,
}
