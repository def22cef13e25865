"""TOPI's pooling (``topi.nn.pool1d/2d/3d``, ``global_pool``, ``adaptive_pool``) as its C++
library defines it. Max pooling is one reduction (``pool_max``, tagged "pool_max") over a
padded copy (``pad_temp``, padded with the dtype's lowest value); average pooling sums
(``pool_sum``) and divides (``pool_avg``, tagged "elemwise") by the window's size, counting
the padding or not (`count_include_pad`). `ceil_mode` rounds the output size up by padding
the end with ``stride - 1`` more elements. Adaptive pooling cuts each dimension into
`output_size` windows, ``[floor(o * n / out), ceil((o + 1) * n / out))``."""

from __future__ import annotations

import schedlang as _sl

from ....errors import AlgorithmError
from ....ir.expr import as_expr
from ...data_layout import Layout
from ...tir import truncdiv
from ..tag import ELEMWISE
from ..utils import const_value, get_const_int, simplified
from .pad import padded

POOL_TYPE_CODE = {"avg": 0, "max": 1}


def _spatial_axes(layout: str, letters: str) -> list[int]:
    """The positions in `layout` of the dimensions `letters` (e.g. "HW" in "NCHW16c")."""
    names = [name for name, _ in Layout(layout).axes]
    for letter in letters:
        if letter not in names or letter.lower() in names:
            raise AlgorithmError(
                f"pooling: layout '{layout}' must have a '{letter}' dimension, not split"
            )
    return [names.index(letter) for letter in letters]


def pool_nd(x, kernel, stride, dilation, padding, pool_type, ceil_mode, axes, count_include_pad):
    """Pooling of `x` over its dimensions `axes` (what `pool1d`/`pool2d`/`pool3d` share)."""
    if pool_type not in POOL_TYPE_CODE:
        raise AlgorithmError(f"pooling: pool_type '{pool_type}' is not 'max' or 'avg'")
    dims = len(axes)
    if not len(kernel) == len(stride) == len(dilation) == dims or len(padding) != 2 * dims:
        raise AlgorithmError(
            f"pooling over {dims} dimensions: give {dims} kernel sizes, strides and dilations "
            f"and {2 * dims} paddings"
        )
    head = list(padding[:dims])
    tail = list(padding[dims:])
    offset = [s - 1 if ceil_mode else 0 for s in stride]
    tail = [t + o for t, o in zip(tail, offset)]
    before, after = [0] * x.ndim, [0] * x.ndim
    shape = list(x.shape)
    for d, ax in enumerate(axes):
        before[ax], after[ax] = head[d], tail[d]
        span = (kernel[d] - 1) * dilation[d] + 1
        shape[ax] = (x.shape[ax] - span + head[d] + tail[d]) // stride[d] + 1
    shape = simplified(shape)
    do_pad = any(get_const_int(p) != 0 for p in head + tail)
    window = [_sl.reduce_axis((0, k), name=f"rv{d}") for d, k in enumerate(kernel)]

    def source(index):
        index = list(index)
        for d, ax in enumerate(axes):
            index[ax] = index[ax] * stride[d] + window[d] * dilation[d]
        return tuple(index)

    if pool_type == "max":
        low = _sl.min_value(x.dtype)
        temp = padded(x, before, after, low, "pad_temp", ELEMWISE) if do_pad else x
        return _sl.compute(
            shape, lambda *i: _sl.max(temp[source(i)], axis=window), "pool_max", "pool_max"
        )
    temp = padded(x, before, after, 0.0, "pad_temp", ELEMWISE) if do_pad else x
    pool_sum = _sl.compute(
        shape, lambda *i: _sl.sum(temp[source(i)], axis=window), "pool_sum", "pool_sum"
    )

    def count(i):
        """The number of elements the window of output `i` sums (as TOPI counts them, in C's
        integer division; a window wholly in the padding counts one)."""
        num = 1
        for d, ax in enumerate(axes):
            start = i[ax] * stride[d] - head[d]
            end = start + (kernel[d] - 1) * dilation[d]
            if count_include_pad:
                end = _sl.minimum(end, x.shape[ax] + tail[d] - 1 - offset[d])
                num = num * (truncdiv(end - start, dilation[d]) + 1)
            else:
                jumps = _sl.maximum(truncdiv(dilation[d] - 1 - start, dilation[d]), 0)
                end = _sl.minimum(end, x.shape[ax] - 1)
                num = num * (truncdiv(end - (start + dilation[d] * jumps), dilation[d]) + 1)
        return num if count_include_pad else _sl.maximum(num, 1)

    return _sl.compute(
        shape, lambda *i: pool_sum[i] / count(i).astype(x.dtype), "pool_avg", ELEMWISE
    )


def _pool(letters: str, default_layout: str):
    def pool(
        data,
        kernel,
        stride,
        dilation,
        padding,
        pool_type,
        ceil_mode=False,
        layout=default_layout,
        count_include_pad=True,
    ):
        axes = _spatial_axes(layout, letters)
        return pool_nd(
            data, kernel, stride, dilation, padding, pool_type, ceil_mode, axes, count_include_pad
        )

    pool.__doc__ = (
        f"Pooling over the {letters} dimensions of `layout`; `padding` gives the sizes before "
        "each of them, then those after."
    )
    return pool


pool1d = _pool("W", "NCW")
pool2d = _pool("HW", "NCHW")
pool3d = _pool("DHW", "NCDHW")


def _windows(extent: int, out: int) -> list[tuple[int, int]]:
    return [((o * extent) // out, -(-((o + 1) * extent) // out)) for o in range(out)]


def adaptive_pool(data, output_size, pool_type, layout="NCHW"):
    """Pooling of the H and W dimensions into `output_size` windows each."""
    return _adaptive(data, output_size, pool_type, _spatial_axes(layout, "HW"))


def global_pool(data, pool_type, layout="NCHW"):
    """Pooling of all of H and W into one element (``adaptive_pool`` to size 1)."""
    return adaptive_pool(data, (1, 1), pool_type, layout)


def _adaptive(x, output_size, pool_type, axes):
    if pool_type not in POOL_TYPE_CODE:
        raise AlgorithmError(f"adaptive_pool: pool_type '{pool_type}' is not 'max' or 'avg'")
    sizes = [get_const_int(o) for o in output_size]
    extents, longest, uniform = [], [], []
    for ax, out in zip(axes, sizes):
        if out == 1:  # one window: the whole dimension, of any extent
            extents.append(x.shape[ax])
            longest.append(x.shape[ax])
            uniform.append(True)
            continue
        extent = const_value(x.shape[ax])
        if extent is None:
            raise AlgorithmError(
                f"adaptive_pool: dimension {ax} of '{x.name}' has the symbolic extent "
                f"{x.shape[ax]}; windows of varying length need constant extents (pooling to "
                "size 1 takes any)"
            )
        lengths = {e - s for s, e in _windows(extent, out)}
        extents.append(extent)
        longest.append(max(lengths))
        uniform.append(len(lengths) == 1)
    shape = list(x.shape)
    for ax, out in zip(axes, sizes):
        shape[ax] = out
    shape = tuple(shape)
    rv = [_sl.reduce_axis((0, n), name=f"rv{d}") for d, n in enumerate(longest)]

    def bounds(i, d, ax):
        """The window of output index ``i[ax]`` along dimension `ax`: start and length."""
        if sizes[d] == 1:
            return 0, extents[d]
        start = (i[ax] * extents[d]) // sizes[d]
        end = ((i[ax] + 1) * extents[d] + sizes[d] - 1) // sizes[d]
        return start, end - start

    def reduce(reducer, i):
        index, inside = list(i), []
        for d, ax in enumerate(axes):
            start, length = bounds(i, d, ax)
            index[ax] = start + rv[d]
            if not uniform[d]:
                inside.append(rv[d] < length)
        where = _sl.all(*inside) if inside else None
        return reducer(x[tuple(index)], axis=rv, where=where)

    if pool_type == "max":
        return _sl.compute(
            shape, lambda *i: reduce(_sl.max, i), "adaptive_pool_max", "adaptive_pool_max"
        )
    total = _sl.compute(
        shape, lambda *i: reduce(_sl.sum, i), "adaptive_pool_sum", "adaptive_pool_sum"
    )

    def average(*i):
        count = 1
        for d, ax in enumerate(axes):
            count = count * bounds(i, d, ax)[1]
        return total[i] / as_expr(count).astype(x.dtype)

    return _sl.compute(shape, average, "adaptive_pool_avg", ELEMWISE)
