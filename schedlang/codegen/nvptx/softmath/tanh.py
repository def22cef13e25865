"""tanh in double, as ``-e / (e + 2)`` with ``e = expm1(-2|x|)`` (`exp.expm1_parts`, a sum of
two doubles): no cancellation anywhere, and the division is corrected by its exact remainder
and the low parts of ``e`` and ``e + 2``, so the result is rounded about once. Below 2**-28
tanh x rounds to x, from 22 on to +-1.
"""

from __future__ import annotations

from llvmlite import ir

from .emit import Emit
from .exp import expm1_parts


def tanh(e: Emit, x: ir.Value) -> ir.Value:
    a = e.abs(x)
    a = e.select(e.cmp("<", a, e.c(22.0)), a, e.c(22.0))  # also NaN -> 22
    m, m_lo = expm1_parts(e, e.mul(e.c(-2.0), a))
    d, d_err = e.fast_two_sum(e.c(2.0), m)  # |m| < 1
    d_lo = e.add(d_err, m_lo)
    q = e.div(e.neg(m), d)
    remainder = e.fma(e.neg(q), d, e.neg(m))  # exact
    # -(m + m_lo) / (d + d_lo) = q + (remainder - m_lo - q d_lo) / d, to second order
    t = e.add(q, e.div(e.fma(e.neg(q), d_lo, e.sub(remainder, m_lo)), d))
    result = e.copysign(t, x)
    result = e.select(e.cmp(">=", e.abs(x), e.c(22.0)), e.copysign(e.c(1.0), x), result)
    keep = e.b.or_(e.cmp("<", e.abs(x), e.c(2.0**-28)), e.is_nan(x))
    return e.select(keep, x, result)
