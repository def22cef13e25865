"""``topi.nn.relu`` and ``topi.nn.leaky_relu``: element-wise, tagged "elemwise"."""

from __future__ import annotations

import schedlang as _sl

from ..tag import ELEMWISE


def relu(x):
    zero = _sl.const(0, x.dtype)
    return _sl.compute(x.shape, lambda *i: _sl.maximum(x[i], zero), tag=ELEMWISE)


def leaky_relu(x, alpha):
    """`x` where positive, ``x * alpha`` elsewhere."""
    slope = _sl.const(alpha, x.dtype)
    return _sl.compute(
        x.shape, lambda *i: _sl.if_then_else(x[i] > 0, x[i], x[i] * slope), tag=ELEMWISE
    )
