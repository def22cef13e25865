"""TOPI's x86 dense with a packed weight (``dense_pack``), and a bias, written with TE's names.

The weight is packed in blocks of `bn` output columns, so that the inner loop of the product
reads `bn` consecutive floats of one packed row: ``packed[z, k, x] = weight[z * bn + x, k]``.
The schedule is TOPI's for that case, with the split factors of its fallback configuration
for a batch of 128 and 1000 outputs on AVX2 (rows by 32 then 8, columns by 40 then 10, the
accumulator's rows by 8): the accumulator, in registers, is computed at the dense stage's fused
loop of 8 x 10 tiles, its rows and reduction step unrolled and its columns vectorized. The
dense stage's fused tile loop runs in parallel; with a bias, the bias stage's tiles are fused
and run in parallel instead, and the dense stage is computed at that fused loop.
"""

from __future__ import annotations

from schedlang.tvm import te

BN = 10  # the packed block of output columns, and the vector width of the inner loop


def dense_pack(m: int, n: int, k_size: int, bn: int = BN, with_bias: bool = True):
    """``out = data @ weight.T + bias`` through the packed weight; `n` a multiple of `bn`.
    Without the bias, `out` is the dense stage itself (and `bias` is not read)."""
    data = te.placeholder((m, k_size), name="data")
    weight = te.placeholder((n, k_size), name="weight")
    bias = te.placeholder((n,), name="bias")
    packed = te.compute(
        (n // bn, k_size, bn), lambda z, y, x: weight[z * bn + x, y], name="packed_weight"
    )
    k = te.reduce_axis((0, k_size), name="k")
    dense = te.compute(
        (m, n),
        lambda y, x: te.sum(data[y, k] * packed[x // bn, k, x % bn], axis=k),
        name="dense",
        tag="dense_pack",
    )
    if not with_bias:
        return data, weight, bias, dense, dense
    out = te.compute((m, n), lambda i, j: dense[i, j] + bias[j], name="out")
    return data, weight, bias, dense, out


def _tiles(s, t, bn: int):
    """Rows by 32 then 8, columns by 4 * bn then bn, the tiles' loops outermost."""
    y, x = s[t].op.axis
    yt, rest = s[t].split(y, factor=32)
    yo, yi = s[t].split(rest, factor=8)
    xt, rest = s[t].split(x, factor=4 * bn)
    xo, xi = s[t].split(rest, factor=bn)
    s[t].reorder(xt, yt, yo, xo, yi, xi)
    return xt, yt, yo, xo, yi, xi


def schedule(dense, out, bn: int = BN):
    s = te.create_schedule(out.op)
    acc = s.cache_write(dense, "global")
    xt, yt, yo, xo, yi, xi = _tiles(s, dense, bn)
    xyt = s[dense].fuse(xt, yt)
    if out is dense:
        s[dense].parallel(xyt)
    xyo = s[dense].fuse(yo, xo)
    s[dense].unroll(yi)
    s[dense].vectorize(xi)

    s[acc].compute_at(s[dense], xyo)
    y, x = s[acc].op.axis
    (k,) = s[acc].op.reduce_axis
    ko, ki = s[acc].split(k, factor=1)
    s[acc].reorder(ko, ki, y, x)
    s[acc].vectorize(x)
    yo, yi = s[acc].split(y, factor=8)
    s[acc].reorder(ko, yo, ki, yi, x)
    s[acc].unroll(yo)
    s[acc].unroll(ki)
    s[acc].unroll(yi)

    if out is dense:
        return s
    xt, yt, yo, xo, yi, xi = _tiles(s, out, bn)
    xyt = s[out].fuse(xt, yt)
    s[dense].compute_at(s[out], xyt)
    s[out].vectorize(xi)
    s[out].parallel(xyt)
    return s
