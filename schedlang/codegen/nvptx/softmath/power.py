"""pow for float32 arguments, computed in double as ``exp(y log|x|)``, with C99's special
cases (Annex F.10.4.4) settled by selects.

For float arguments the double product ``y log|x|`` is off by at most about 2**-44 relative
wherever the float result is finite and nonzero (``|y log|x|| < 104``), which moves the double
result far less than half a float ulp; the float result is the correctly rounded one except
within about 2**-20 ulp of a rounding boundary. The same scheme in double would lose up to
``log2(|y log|x||)`` bits, which is why float64 pow has no soft implementation (see
`symbol`).
"""

from __future__ import annotations

from llvmlite import ir

from .emit import F32, Emit


def powf(e: Emit, x32: ir.Value, y32: ir.Value, exp: ir.Function, log: ir.Function) -> ir.Value:
    b = e.b
    x = b.fpext(x32, e.t)
    y = b.fpext(y32, e.t)
    result = e.call(exp, e.mul(y, e.call(log, e.abs(x))))
    integer = e.cmp("==", e.trunc(y), y)  # also for +-inf
    half = e.mul(y, e.c(0.5))
    odd = b.and_(integer, e.cmp("!=", e.trunc(half), half))
    negative = b.icmp_signed("<", e.bits(x), e.i64(0))  # -0 too
    result = e.select(b.and_(negative, odd), e.neg(result), result)
    finite_negative = b.and_(e.cmp("<", x, e.c(0.0)), e.cmp(">", x, e.c(float("-inf"))))
    y_finite = e.cmp("<", e.abs(y), e.c(float("inf")))
    non_integer = b.and_(y_finite, b.not_(integer))
    result = e.select(b.and_(finite_negative, non_integer), e.c(float("nan")), result)
    one = e.c(1.0)
    minus_one_inf = b.and_(e.cmp("==", x, e.c(-1.0)), e.cmp("==", e.abs(y), e.c(float("inf"))))
    is_one = b.or_(b.or_(e.cmp("==", y, e.c(0.0)), e.cmp("==", x, one)), minus_one_inf)
    result = e.select(is_one, one, result)
    return b.fptrunc(result, F32)
