"""Layer norm and RMSNorm over the rows of a matrix, written as their definitions.

Over ``X[m, n]`` (float32, float16 or bfloat16), statistics in float32, the output in X's
dtype::

    layer norm:  mean = sum_j x / n;  var = sum_j (x - mean)^2 / n
                 y = (x - mean) * rsqrt(var + eps) * w + b
    RMSNorm:     ms = sum_j x^2 / n;  y = x * rsqrt(ms + eps) * w

One block per row, as the softmax of `examples.gpu_rows` (or a few rows per block, one per
``threadIdx.y``, for short rows): the row is staged once in shared memory (in X's dtype, 16
bytes per thread per load), each sum is combined by every thread over its share of the shared
row (``rfactor``, its loads 16 bytes wide) and then across the row's threads, and the output is
written 16 bytes per thread per store. Global memory is read once and written once, so the
kernel can run at the copy bandwidth.

The two sums of the layer norm read the row twice (from shared memory). The one-pass form,
Welford's as Chan et al. merge it, is the same definition under ``s.online([Sum, Squares],
factor)`` (`online_schedule`): each block of `factor` columns has its sum and its squares
about its own mean computed by one thread, and a scan merges the blocks.
"""

from __future__ import annotations

from dataclasses import dataclass

import schedlang as sl
from examples import gpu_attention, gpu_rows
from schedlang.ir.dtype import itemsize
from schedlang.ir.integers import as_int

THREADS = 256


@dataclass(frozen=True)
class Norm:
    """A normalisation's tensors: the inputs (``X`` then the affine parameters), the row sums,
    the per-row values made from them, and the output."""

    inputs: tuple[sl.Tensor, ...]
    sums: tuple[sl.Tensor, ...]
    scalars: tuple[sl.Tensor, ...]
    out: sl.Tensor

    @property
    def args(self) -> list[sl.Tensor]:
        return [*self.inputs, self.out]


def _wide(e):
    return e.astype("float32")


def layer_norm(m, n: int, dtype: str = "float32", eps: float = 1e-5, affine: bool = True) -> Norm:
    """``Y = (X - mean) * rsqrt(var + eps) * W + B`` per row; without `affine`, no W and B."""
    x = sl.placeholder((m, n), dtype, name="X")
    k1 = sl.reduce_axis((0, n), name="k1")
    k2 = sl.reduce_axis((0, n), name="k2")
    total = sl.compute((m,), lambda i: sl.sum(_wide(x[i, k1]), axis=k1), name="Sum")
    mean = sl.compute((m,), lambda i: total[i] / n, name="Mean")
    squares = sl.compute(
        (m,), lambda i: sl.sum((_wide(x[i, k2]) - mean[i]) ** 2, axis=k2), name="Squares"
    )
    rstd = sl.compute((m,), lambda i: sl.rsqrt(squares[i] / n + eps), name="Rstd")
    params: tuple[sl.Tensor, ...] = ()
    if affine:
        params = (sl.placeholder((n,), dtype, name="W"), sl.placeholder((n,), dtype, name="B"))

    def normed(i, j):
        y = (_wide(x[i, j]) - mean[i]) * rstd[i]
        if affine:
            y = y * _wide(params[0][j]) + _wide(params[1][j])
        return y.astype(dtype)

    y = sl.compute((m, n), normed, name="Y")
    return Norm((x, *params), (total, squares), (mean, rstd), y)


def rms_norm(m, n: int, dtype: str = "float32", eps: float = 1e-6, affine: bool = True) -> Norm:
    """``Y = X * rsqrt(mean(X^2) + eps) * W`` per row; without `affine`, no W."""
    x = sl.placeholder((m, n), dtype, name="X")
    k = sl.reduce_axis((0, n), name="k")
    squares = sl.compute((m,), lambda i: sl.sum(_wide(x[i, k]) ** 2, axis=k), name="Squares")
    rstd = sl.compute((m,), lambda i: sl.rsqrt(squares[i] / n + eps), name="Rstd")
    params = (sl.placeholder((n,), dtype, name="W"),) if affine else ()

    def normed(i, j):
        y = _wide(x[i, j]) * rstd[i]
        if affine:
            y = y * _wide(params[0][j])
        return y.astype(dtype)

    y = sl.compute((m, n), normed, name="Y")
    return Norm((x, *params), (squares,), (rstd,), y)


def lanes_of(dtype: str) -> int:
    """Elements per 16-byte load or store."""
    return 16 // itemsize(dtype)


def schedule(
    norm: Norm, threads: int = THREADS, lanes: int | None = None, rows: int = 1
) -> sl.Schedule:
    """Blocks of `rows` rows (``threadIdx.y``), `threads` threads per row (``threadIdx.x``),
    the block's rows staged in shared memory; `lanes` elements per load and store (by default
    16 bytes of X's dtype). Several rows a block suit short rows: a row's sums are then
    combined by fewer threads, one warp's shuffles alone at 32."""
    x, y = norm.inputs[0], norm.out
    if as_int(x.shape[1]) is None:
        raise ValueError(
            f"the row is staged in shared memory: its length must be a constant, not '{x.shape[1]}'"
        )
    lanes = lanes or lanes_of(x.dtype)
    s = sl.create_schedule(y.op)
    row = s.cache_read(x, "shared", [*norm.sums, y])
    block = _rows_out(s, y, threads, lanes, rows)
    for total in norm.sums:
        gpu_rows.threads_reduce(s, total, threads, lanes)
    for stage in (*norm.sums, *norm.scalars, row):
        s[stage].compute_at(s[y], block)
        if rows > 1:  # the block's rows side by side, one a threadIdx.y
            s[stage].set_scope("shared")
            s[stage].bind(s[stage].op.axis[0], sl.thread_axis("threadIdx.y"))
    _across_threads(s, row, s[row].op.axis[1], threads, lanes)
    return s


def _rows_out(s: sl.Schedule, y: sl.Tensor, threads: int, lanes: int, rows: int = 1) -> sl.IterVar:
    """`y`'s rows over blocks of `rows`, each row written `lanes` elements per thread per
    store; the block's axis."""
    block = s[y].op.axis[0]
    if rows > 1:
        block, inner = s[y].split(block, factor=rows)
        s[y].bind(inner, sl.thread_axis("threadIdx.y"))
    s[y].bind(block, sl.thread_axis("blockIdx.x"))
    _across_threads(s, y, s[y].op.axis[1], threads, lanes)
    return block


def _across_threads(s: sl.Schedule, stage: sl.Tensor, axis, threads: int, lanes: int) -> None:
    """`axis` of `stage` over `threads` threads, `lanes` neighbouring elements per thread per
    step (one 16-byte access), the steps unrolled."""
    rest, lane = s[stage].split(axis, factor=lanes)
    steps, tx = s[stage].split(rest, factor=threads)
    s[stage].bind(tx, sl.thread_axis("threadIdx.x"))
    s[stage].vectorize(lane)
    s[stage].unroll(steps)


def online_schedule(norm: Norm, factor: int = 256, threads: int = THREADS) -> sl.Schedule:
    """The layer norm's statistics in one pass over X: ``s.online([Sum, Squares], factor)``
    (Welford's form, merged a block of `factor` columns at a time as Chan et al. merge
    partial results). Each block's sum and squares about its own mean are one thread's work,
    rows side by side across threads; the scan merging the blocks is a loop of kernels
    launched by the host (a scan cannot be computed inside a block's loops), its states in
    global memory; the output is written as in `schedule`, reading X again."""
    x, y = norm.inputs[0], norm.out
    s = sl.create_schedule(y.op)
    s.online(list(norm.sums), factor=factor)
    _rows_out(s, y, threads, lanes_of(x.dtype))
    gpu_attention.spread_stages(s, threads, keep=(y,))
    return s


def build(kind: str, m, n: int, dtype: str = "float32", target: str = "cuda", **options):
    """``layer_norm`` or ``rms_norm`` (`kind`) at ``(m, n)``, scheduled and built; its
    arguments are ``Norm.args``: X, the affine parameters, Y."""
    define = {"layer_norm": layer_norm, "rms_norm": rms_norm}[kind]
    eps = options.pop("eps", 1e-5 if kind == "layer_norm" else 1e-6)
    norm = define(m, n, dtype, eps=eps, affine=options.pop("affine", True))
    return sl.build(schedule(norm, **options), norm.args, target=target)
