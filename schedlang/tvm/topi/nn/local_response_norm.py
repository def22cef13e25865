"""``topi.nn.lrn``: local response normalization across `size` neighbouring channels, as
TOPI's C++ library computes it: squares summed over the window of a zero-padded copy
(``pad_data``; ``tensor`` tagged "sqr_sum"), raised to `beta` (``tensor``, "elemwise"), and
the data divided by that (``T_divide``, "broadcast")."""

from __future__ import annotations

import schedlang as _sl

from ....errors import AlgorithmError
from ....ir.dtype import is_float
from ..broadcast import divide
from ..tag import ELEMWISE
from .pad import padded


def lrn(data, size, axis=1, alpha=0.0001, beta=0.75, bias=2):
    if data.ndim != 4 or size % 2 != 1 or axis not in (1, 3) or not is_float(data.dtype):
        raise AlgorithmError(
            "lrn: the data must be 4-D and of a float dtype, `size` odd and `axis` 1 (NCHW) or "
            f"3 (NHWC); got {data.ndim}-D {data.dtype}, size={size}, axis={axis}"
        )
    half = [size // 2 if d == axis else 0 for d in range(4)]
    pad_data = padded(data, half, half, 0, "pad_data", ELEMWISE)
    rxs = _sl.reduce_axis((0, size), name="rxs")

    def window(i, j, k, m):
        index = [i, j, k, m]
        index[axis] = index[axis] + rxs
        return pad_data[tuple(index)]

    sqr_sum = _sl.compute(
        data.shape,
        lambda i, j, k, m: _sl.sum(window(i, j, k, m) * window(i, j, k, m), axis=rxs),
        name="tensor",
        tag="sqr_sum",
    )
    alpha_, beta_, bias_ = (_sl.const(v, data.dtype) for v in (alpha, beta, bias))
    sqr_sum_up = _sl.compute(
        data.shape,
        lambda i, j, k, m: _sl.pow(bias_ + alpha_ * sqr_sum[i, j, k, m] / size, beta_),
        name="tensor",
        tag=ELEMWISE,
    )
    return divide(data, sqr_sum_up)
