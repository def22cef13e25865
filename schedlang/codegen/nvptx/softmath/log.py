"""log and log2 in double: ``x = 2**k (1 + f)`` with ``1 + f`` in ``[sqrt(1/2), sqrt(2)]``, and
``log(1+f) = 2s + s R(s**2)``, ``s = f/(2+f)`` (the artanh series, `constants.log_tail`),
rearranged as ``f - f**2/2 + s (f**2/2 + R)`` so that the division's rounding only touches a
small term (the arrangement of Sun's fdlibm). The leading part is kept as an exact double-double
so that ``k ln2`` (or ``k`` for log2) and ``1/ln2`` are added and multiplied in without a
second rounding of the large terms.
"""

from __future__ import annotations

from llvmlite import ir

from .constants import INV_LN2, LN2_PARTS, SQRT2_MANTISSA, log_tail
from .emit import Emit

_TAIL = log_tail()
_MANTISSA = (1 << 52) - 1


def log1p_parts(e: Emit, f: ir.Value) -> tuple[ir.Value, ir.Value]:
    """``(hi, lo)`` with ``hi + lo = log(1 + f)`` to about 2**-60 relative, for ``f`` in
    ``[sqrt(1/2) - 1, sqrt(2) - 1]``; ``hi`` is ``f - f**2/2`` rounded."""
    s = e.div(f, e.add(e.c(2.0), f))
    z = e.mul(s, s)
    r = e.mul(z, e.horner(z, _TAIL))
    half_f = e.mul(e.c(0.5), f)
    hfsq = e.mul(half_f, f)
    hfsq_err = e.fma(half_f, f, e.neg(hfsq))  # f*f/2 = hfsq + hfsq_err exactly
    hi, hi_err = e.fast_two_sum(f, e.neg(hfsq))  # |f| >= f*f/2 here
    lo = e.fma(s, e.add(hfsq, r), e.sub(hi_err, hfsq_err))
    return hi, lo


def decompose(e: Emit, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """``(k, f)`` with ``x = 2**k (1 + f)``, ``k`` a double, for positive finite `x` (subnormals
    included); other inputs give some finite pair, for the caller to replace."""
    b = e.b
    usable = b.and_(e.cmp(">", x, e.c(0.0)), e.cmp("<", x, e.c(float("inf"))))
    x = e.select(usable, x, e.c(1.0))
    subnormal = e.cmp("<", x, e.c(2.0**-1022))
    x = e.select(subnormal, e.mul(x, e.c(2.0**54)), x)
    bits = e.bits(x)
    mantissa = b.and_(bits, e.i64(_MANTISSA))
    above = b.icmp_unsigned(">", mantissa, e.i64(SQRT2_MANTISSA))
    exponent = b.sub(b.lshr(bits, e.i64(52)), e.i64(1023))
    exponent = b.add(exponent, b.zext(above, exponent.type))
    exponent = b.sub(exponent, b.select(subnormal, e.i64(54), e.i64(0)))
    biased = b.select(above, e.i64(1022 << 52), e.i64(1023 << 52))
    m = e.from_bits(b.or_(mantissa, biased))
    return b.sitofp(exponent, e.t), e.sub(m, e.c(1.0))  # m - 1 is exact


def _specials(e: Emit, x: ir.Value, result: ir.Value) -> ir.Value:
    """log(+-0) = -inf, log(x < 0) = NaN, log(inf) = inf, log(NaN) = NaN."""
    result = e.select(e.cmp("==", x, e.c(float("inf"))), x, result)
    result = e.select(e.cmp("==", x, e.c(0.0)), e.c(float("-inf")), result)
    nan = e.b.or_(e.cmp("<", x, e.c(0.0)), e.is_nan(x))
    return e.select(nan, e.c(float("nan")), result)


def log(e: Emit, x: ir.Value) -> ir.Value:
    k, f = decompose(e, x)
    hi, lo = log1p_parts(e, f)
    ln2_hi, ln2_lo = LN2_PARTS
    a = e.mul(k, e.c(ln2_hi))
    a_err = e.fma(k, e.c(ln2_hi), e.neg(a))
    s, s_err = e.two_sum(a, hi)
    small = e.add(e.fma(k, e.c(ln2_lo), lo), e.add(s_err, a_err))
    return _specials(e, x, e.add(s, small))


def log2(e: Emit, x: ir.Value) -> ir.Value:
    k, f = decompose(e, x)
    hi, lo = log1p_parts(e, f)
    il_hi, il_lo = INV_LN2
    p = e.mul(hi, e.c(il_hi))
    low = e.fma(lo, e.c(il_hi), e.fma(hi, e.c(il_lo), e.fma(hi, e.c(il_hi), e.neg(p))))
    s, s_err = e.two_sum(k, p)
    return _specials(e, x, e.add(s, e.add(s_err, low)))
