"""exp, exp2 and expm1 in double: ``x = k ln2 + r`` with ``|r| <= ln2/2`` (Cody and Waite:
``x - k ln2_hi`` is exact by fma, ``k ln2_lo`` is carried separately), ``exp(r) - 1`` from its
Taylor series (`constants.exp_tail`) as an unevaluated sum of two doubles, and ``2**k``
applied so that every result, subnormal ones included, is rounded once. Inputs are
clamped to where the result is still finite and nonzero before ``k`` is formed, so overflow
and underflow come out of the arithmetic itself.
"""

from __future__ import annotations

from llvmlite import ir

from .constants import INV_LN2_ROUNDED, LN2_PARTS, exp_tail
from .emit import I64, Emit

_TAIL = exp_tail()


def _expm1_parts(e: Emit, r: ir.Value, r_lo: ir.Value) -> tuple[ir.Value, ir.Value]:
    """``(s, lo)`` with ``s + lo = exp(r + r_lo) - 1`` to about 2**-57 relative, for
    ``|r| <= 0.36`` and ``|r_lo| <= 2**-50 |r|``."""
    p = e.mul(e.mul(r, r), e.horner(r, _TAIL))
    s, s_err = e.fast_two_sum(r, p)  # |p| < |r| / 4
    return s, e.add(s_err, e.fma(r_lo, s, r_lo))  # d/dr (e**r - 1) = 1 + (e**r - 1)


def _reduce(e: Emit, x: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value]:
    """``(k, r, r_lo)`` with ``x = k ln2 + r + r_lo``, ``k`` an i64, for ``|x| <= 1500``."""
    kf = e.rint(e.mul(x, e.c(INV_LN2_ROUNDED)))
    hi, lo = LN2_PARTS
    r = e.fma(e.neg(kf), e.c(hi), x)  # exact: the fma rounds a value that fits
    return e.b.fptosi(kf, I64), r, e.mul(e.neg(kf), e.c(lo))


def _clamped(e: Emit, x: ir.Value, lo: float, hi: float) -> ir.Value:
    """`x` limited to [lo, hi]; NaN becomes 0 (the caller selects NaN afterwards)."""
    x = e.select(e.cmp("<", x, e.c(lo)), e.c(lo), x)
    x = e.select(e.cmp(">", x, e.c(hi)), e.c(hi), x)
    return e.select(e.is_nan(x), e.c(0.0), x)


def _finish(e: Emit, s: ir.Value, lo: ir.Value, k: ir.Value) -> ir.Value:
    """``(1 + s + lo) 2**k`` rounded once, subnormal results included: there the sum is scaled
    to ``y < 1`` exactly and ``1 + y`` rounds where the subnormal result must (2**-52 is
    2**-1074 after scaling by 2**-1022)."""
    h, h_err = e.fast_two_sum(e.c(1.0), s)  # |s| < 1/2
    low = e.add(h_err, lo)
    normal = e.scale(e.add(h, low), k)
    low_k = e.b.icmp_signed("<", k, e.i64(-1021))
    up = e.pow2(e.select(low_k, e.b.add(k, e.i64(1022)), e.i64(0)))  # >= 2**-58 as k >= -1080
    y = e.mul(h, up)
    one, one_err = e.fast_two_sum(e.c(1.0), y)
    tiny = e.mul(e.sub(e.add(one, e.fma(low, up, one_err)), e.c(1.0)), e.c(2.0**-1022))
    return e.select(e.b.and_(low_k, e.cmp("<", y, e.c(1.0))), tiny, normal)


def exp(e: Emit, x: ir.Value) -> ir.Value:
    # exp(-746) rounds to 0 and exp(710) to inf, so the clamp changes no result.
    k, r, r_lo = _reduce(e, _clamped(e, x, -746.0, 710.0))
    result = _finish(e, *_expm1_parts(e, r, r_lo), k)
    return e.select(e.is_nan(x), x, result)


def exp2(e: Emit, x: ir.Value) -> ir.Value:
    xc = _clamped(e, x, -1080.0, 1030.0)
    kf = e.rint(xc)
    r = e.sub(xc, kf)  # exact, |r| <= 1/2
    hi, lo = LN2_PARTS
    t = e.mul(r, e.c(hi))
    t_lo = e.fma(r, e.c(lo), e.fma(r, e.c(hi), e.neg(t)))  # r ln2 = t + t_lo
    result = _finish(e, *_expm1_parts(e, t, t_lo), e.b.fptosi(kf, I64))
    return e.select(e.is_nan(x), x, result)


def expm1_parts(e: Emit, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """``(hi, lo)`` with ``hi + lo = exp(x) - 1`` to about 2**-57 relative, ``hi`` rounded, for
    finite ``x`` in [-44, 0]: ``2**k s + (2**k - 1)`` with both terms exact; where ``2**k - 1``
    is not a double (``k < -53``) it is -1 and ``2**k`` joins the low part."""
    k, r, r_lo = _reduce(e, x)
    s, lo = _expm1_parts(e, r, r_lo)
    p2 = e.pow2(k)
    tiny = e.b.icmp_signed("<", k, e.i64(-53))
    hi, hi_err = e.two_sum(e.mul(p2, s), e.select(tiny, e.c(-1.0), e.sub(p2, e.c(1.0))))
    return hi, e.fma(p2, lo, e.add(hi_err, e.select(tiny, p2, e.c(0.0))))
