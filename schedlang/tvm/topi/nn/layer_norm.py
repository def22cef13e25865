"""``topi.nn.layer_norm``: the data normalized over `axis` (mean and variance from one pass that
sums x and x², ``<data>_red_temp``, tagged "comm_reduce"), scaled by `gamma` and shifted by
`beta` (both shaped as the normalized dimensions), in ``T_layer_norm`` tagged "injective"."""

from __future__ import annotations

import schedlang as _sl

from ..reduction import real_axes, source_index
from ..tag import COMM_REDUCE, INJECTIVE

_tuple_sum = _sl.comm_reducer(
    lambda x, y: (x[0] + y[0], x[1] + y[1]),
    lambda t0, t1: (_sl.const(0, t0), _sl.const(0, t1)),
    name="tuple_sum",
)


def layer_norm(data, gamma, beta, axis, epsilon=1e-5):
    axes = real_axes(data, axis)
    reduce_axes = [_sl.reduce_axis((0, data.shape[d]), name=f"k{d}") for d in axes]
    kept = [n for d, n in enumerate(data.shape) if d not in axes] or [1]

    def sums(*index):
        source = data[source_index(data, axes, reduce_axes, index, keepdims=False)]
        return _tuple_sum((source, source * source), axis=reduce_axes)

    total, squares = _sl.compute(tuple(kept), sums, name=f"{data.name}_red_temp", tag=COMM_REDUCE)
    count = _sl.const(1, data.dtype)
    for d in axes:
        count = count * data.shape[d].astype(data.dtype)
    eps = _sl.const(epsilon, data.dtype)

    def normalized(*index):
        outer = tuple(i for d, i in enumerate(index) if d not in axes) or (0,)
        inner = tuple(i for d, i in enumerate(index) if d in axes)
        mean = total[outer] / count
        var = squares[outer] / count - mean * mean
        value = (data[index] - mean) * _sl.rsqrt(var + eps) * gamma[inner]
        return value + beta[inner] if beta is not None else value

    return _sl.compute(data.shape, normalized, name="T_layer_norm", tag=INJECTIVE)
