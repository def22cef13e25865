"""TOPI's element-wise math (``topi.exp``, ``topi.sqrt``, ``topi.clip``, ``topi.cast``...): one
compute per call, named ``compute`` and tagged "elemwise" as TOPI's are, so TOPI's schedules
inline them into their consumers."""

from __future__ import annotations

import schedlang as _sl

from ...ir.expr import unary
from .tag import ELEMWISE


def _elementwise(x, function, name: str = "compute"):
    return _sl.compute(x.shape, lambda *i: function(x[i]), name=name, tag=ELEMWISE)


def identity(x):
    return _elementwise(x, lambda v: v)


def negative(x):
    return _elementwise(x, lambda v: unary("-", v))


def exp(x):
    return _elementwise(x, _sl.exp)


def erf(x):
    return _elementwise(x, _sl.erf)


def tanh(x):
    return _elementwise(x, _sl.tanh)


def cos(x):
    return _elementwise(x, _sl.cos)


def sin(x):
    return _elementwise(x, _sl.sin)


def floor(x):
    return _elementwise(x, _sl.floor)


def ceil(x):
    return _elementwise(x, _sl.ceil)


def round(x):  # noqa: A001 - TOPI's name
    return _elementwise(x, _sl.round)


def abs(x):  # noqa: A001 - TOPI's name
    return _elementwise(x, _sl.abs)


def log(x):
    return _elementwise(x, _sl.log)


def log2(x):
    return _elementwise(x, _sl.log2)


def sqrt(x):
    return _elementwise(x, _sl.sqrt)


def rsqrt(x):
    return _elementwise(x, _sl.rsqrt)


def sigmoid(x):
    return _elementwise(x, _sl.sigmoid)


def trunc(x):
    """Rounded toward zero: the floor of positive elements, the ceiling of negative ones."""
    return _elementwise(x, lambda v: _sl.if_then_else(v < 0, _sl.ceil(v), _sl.floor(v)))


def clip(x, a_min, a_max):
    """Each element held within ``[a_min, a_max]`` (given in the elements' dtype)."""
    low = _sl.const(a_min, x.dtype)
    high = _sl.const(a_max, x.dtype)
    return _elementwise(x, lambda v: _sl.minimum(_sl.maximum(v, low), high))


def cast(x, dtype):
    """`x` converted to `dtype`; a scalar expression is converted in place."""
    if not isinstance(x, _sl.Tensor):
        return _sl.const(x, dtype) if isinstance(x, (int, float)) else x.astype(dtype)
    return _elementwise(x, lambda v: v.astype(dtype))


def fast_exp(x):
    """TOPI's approximate exponential; here the exact one, which it approximates."""
    return _elementwise(x, _sl.exp, name="T_fast_exp")
