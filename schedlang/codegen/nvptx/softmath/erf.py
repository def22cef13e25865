"""erf in double, on the intervals and with the rational minimax approximations of Sun's
fdlibm ``s_erf.c`` (coefficients below are fdlibm's, (c) 1993 Sun Microsystems, freely
usable with its notice; the code around them is schedlang's):

- ``|x| < 0.84375``: ``x + x P(x**2)/Q(x**2)``;
- ``[0.84375, 1.25)``: ``erx + P(s)/Q(s)``, ``s = |x| - 1``, ``erx`` = erf(1) in 24 bits;
- ``[1.25, 6)``: ``1 - exp(-z**2 - 0.5625) exp((z - x)(z + x) + R/S) / x``, ``R/S`` a
  rational function of ``1/x**2`` (two sets), ``z`` = `x` cut to 21 bits so ``z**2`` is exact;
- from 6 on, +-1.

fdlibm states an error below 1 ulp; the sums here are the same, with fma where it has
``a*b + c``.
"""

from __future__ import annotations

from llvmlite import ir

from .emit import Emit

ERX = 8.45062911510467529297e-01
PP = [
    1.28379167095512558561e-01,
    -3.25042107247001499370e-01,
    -2.84817495755985104766e-02,
    -5.77027029648944159157e-03,
    -2.37630166566501626084e-05,
]
QQ = [
    1.0,
    3.97917223959155352819e-01,
    6.50222499887672944485e-02,
    5.08130628187576562776e-03,
    1.32494738004321644526e-04,
    -3.96022827877536812320e-06,
]
PA = [
    -2.36211856075265944077e-03,
    4.14856118683748331666e-01,
    -3.72207876035701323847e-01,
    3.18346619901161753674e-01,
    -1.10894694282396677476e-01,
    3.54783043256182359371e-02,
    -2.16637559486879084300e-03,
]
QA = [
    1.0,
    1.06420880400844228286e-01,
    5.40397917702171048937e-01,
    7.18286544141962662868e-02,
    1.26171219808761642112e-01,
    1.36370839120290507362e-02,
    1.19844998467991074170e-02,
]
RA = [
    -9.86494403484714822705e-03,
    -6.93858572707181764372e-01,
    -1.05586262253232909814e01,
    -6.23753324503260060396e01,
    -1.62396669462573470355e02,
    -1.84605092906711035994e02,
    -8.12874355063065934246e01,
    -9.81432934416914548592e00,
]
SA = [
    1.0,
    1.96512716674392571292e01,
    1.37657754143519042600e02,
    4.34565877475229228821e02,
    6.45387271733267880336e02,
    4.29008140027567833386e02,
    1.08635005541779435134e02,
    6.57024977031928170135e00,
    -6.04244152148580987438e-02,
]
RB = [
    -9.86494292470009928597e-03,
    -7.99283237680523006574e-01,
    -1.77579549177547519889e01,
    -1.60636384855821916062e02,
    -6.37566443368389627722e02,
    -1.02509513161107724954e03,
    -4.83519191608651397019e02,
]
SB = [
    1.0,
    3.03380607434824582924e01,
    3.25792512996573918826e02,
    1.53672958608443695994e03,
    3.19985821950859553908e03,
    2.55305040643316442583e03,
    4.74528541206955367215e02,
    -2.24409524465858183362e01,
]


def erf(e: Emit, x: ir.Value, exp: ir.Function) -> ir.Value:
    """`exp` is the library's double exp (the tail needs two)."""
    b = e.b
    a = e.abs(x)
    a = e.select(e.cmp("<", a, e.c(6.0)), a, e.c(6.0))  # also NaN -> 6
    z2 = e.mul(x, x)
    near0 = e.fma(x, e.div(e.horner(z2, PP), e.horner(z2, QQ)), x)
    s = e.sub(a, e.c(1.0))
    near1 = e.add(e.c(ERX), e.div(e.horner(s, PA), e.horner(s, QA)))
    with b.if_else(e.cmp(">=", a, e.c(1.25))) as (then, otherwise):
        with then:
            inv = e.div(e.c(1.0), e.mul(a, a))
            first = e.cmp("<", a, e.c(1 / 0.35))
            ratio = e.select(
                first,
                e.div(e.horner(inv, RA), e.horner(inv, SA)),
                e.div(e.horner(inv, RB), e.horner(inv, SB)),
            )
            cut = e.from_bits(b.and_(e.bits(a), e.i64(-(1 << 32))))
            big = e.mul(
                e.call(exp, e.fma(e.neg(cut), cut, e.c(-0.5625))),
                e.call(exp, e.fma(e.sub(cut, a), e.add(cut, a), ratio)),
            )
            tail = e.sub(e.c(1.0), e.div(big, a))
            tail_block = b.block
        with otherwise:
            otherwise_block = b.block
    far = b.phi(e.t)
    far.add_incoming(tail, tail_block)
    far.add_incoming(e.c(0.0), otherwise_block)
    result = e.select(e.cmp("<", a, e.c(0.84375)), near0, e.copysign(near1, x))
    result = e.select(e.cmp(">=", a, e.c(1.25)), e.copysign(far, x), result)
    result = e.select(e.cmp(">=", a, e.c(6.0)), e.copysign(e.c(1.0), x), result)
    return e.select(e.is_nan(x), x, result)
