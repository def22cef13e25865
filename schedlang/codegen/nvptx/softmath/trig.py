"""sin and cos in double: ``x = q pi/2 + r``, ``|r| <= pi/4`` kept as a double-double, then the
Taylor series of sin or cos on ``r`` (`constants.sin_tail`, `cos_tail`) chosen and signed by
``q mod 4``.

The reduction is Cody and Waite's for ``|x| < 2**20``: pi/2 in three parts, the first product
subtracted exactly by fma, the other two carried in the low part. Beyond, and for every finite
double, it is Payne and Hanek's: with ``x = M 2**e`` (``M`` the 53-bit integer significand),
the bits of 2/pi worth ``2**2`` and more after multiplying by ``x`` cannot change ``x 2/pi mod
4`` and are skipped; the next 192 bits, read from a table at an offset set by ``e``, times
``M`` in 128-bit integer arithmetic give the quadrant and 126 bits of the fraction, enough for
the closest a double comes to a multiple of pi/2 (about 2**-61 relative).
"""

from __future__ import annotations

from llvmlite import ir

from ...llvm.intrinsics import intrinsic
from .constants import PIO2, TWO_OVER_PI, cos_tail, sin_tail, two_over_pi_words
from .emit import F64, I1, I32, I64, I128, Emit

_WORDS = two_over_pi_words(21)  # offsets up to e + 62 = 1034 read words 16..19
_SIN = sin_tail()
_COS = cos_tail()
LARGE = 2.0**20


def _table(module: ir.Module) -> ir.GlobalVariable:
    existing = module.globals.get("sl.two_over_pi")
    if existing is not None:
        return existing
    t = ir.ArrayType(I64, len(_WORDS))
    table = ir.GlobalVariable(module, t, "sl.two_over_pi")
    table.global_constant = True
    table.linkage = "internal"
    table.initializer = ir.Constant(t, [ir.Constant(I64, w) for w in _WORDS])
    return table


def _reduce_small(e: Emit, x: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value]:
    p1, p2, p3 = PIO2
    kf = e.rint(e.mul(x, e.c(TWO_OVER_PI)))
    nk = e.neg(kf)
    t = e.fma(nk, e.c(p1), x)  # exact for |x| < 2**20
    m = e.mul(kf, e.c(p2))
    m_err = e.fma(kf, e.c(p2), e.neg(m))
    hi, lo = e.two_sum(t, e.neg(m))
    lo = e.fma(nk, e.c(p3), e.sub(lo, m_err))
    hi, lo = e.fast_two_sum(hi, lo)
    return e.b.fptosi(kf, I32), hi, lo


def _reduce_large(e: Emit, x: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value]:
    """For finite ``|x| >= 2**20`` (any other value gives some finite triple)."""
    b = e.b
    bits = b.and_(e.bits(x), e.i64((1 << 63) - 1))
    mant = b.or_(b.and_(bits, e.i64((1 << 52) - 1)), e.i64(1 << 52))
    offset = b.add(b.lshr(bits, e.i64(52)), e.i64(62 - 1075))  # e + 62, e = exponent - 1075
    word = b.lshr(offset, e.i64(6))
    shift = b.and_(offset, e.i64(63))
    table = _table(b.module)
    fshl = intrinsic(b.module, "llvm.fshl", [I64], I64, [I64, I64, I64])

    def load(k: int) -> ir.Value:
        ptr = b.gep(table, [ir.Constant(I32, 0), b.add(word, e.i64(k))], inbounds=True)
        return b.load(ptr)

    t = [load(k) for k in range(4)]
    w2, w1, w0 = (b.call(fshl, [t[k], t[k + 1], shift]) for k in range(3))
    m128 = b.zext(mant, I128)
    low = b.mul(m128, b.zext(w0, I128))
    mid = b.add(b.mul(m128, b.zext(w1, I128)), b.lshr(low, ir.Constant(I128, 64)))
    top = b.add(b.trunc(b.lshr(mid, ir.Constant(I128, 64)), I64), b.mul(mant, w2))
    # (top:mid) / 2**126 is x 2/pi mod 4; the top two bits are the quadrant.
    both = b.or_(b.shl(b.zext(top, I128), ir.Constant(I128, 64)), b.zext(b.trunc(mid, I64), I128))
    frac = b.shl(both, ir.Constant(I128, 2))
    negative = b.icmp_signed("<", frac, ir.Constant(I128, 0))  # fraction >= 1/2: round up
    q = b.add(b.trunc(b.lshr(top, e.i64(62)), I32), b.zext(negative, I32))
    magnitude = b.select(negative, b.neg(frac), frac)
    ctlz = intrinsic(b.module, "llvm.ctlz", [I128], I128, [I128, I1])
    lead = b.call(ctlz, [magnitude, ir.Constant(I1, 0)])
    lead = b.select(
        b.icmp_unsigned(">", lead, ir.Constant(I128, 127)), ir.Constant(I128, 127), lead
    )
    norm = b.shl(magnitude, lead)  # bit 127 set: 53 bits for hi, the next 64 for lo
    head = b.trunc(b.lshr(norm, ir.Constant(I128, 75)), I64)
    rest = b.trunc(b.lshr(norm, ir.Constant(I128, 11)), I64)
    lead64 = b.neg(b.trunc(lead, I64))
    hi = e.mul(b.uitofp(head, F64), e.scale(e.c(2.0**-53), lead64))
    lo = e.mul(b.uitofp(rest, F64), e.scale(e.c(2.0**-117), lead64))
    # The fraction is hi + lo (times the sign); times pi/2 as a double-double.
    p1, p2, _ = PIO2
    r = e.mul(hi, e.c(p1))
    r_lo = e.fma(lo, e.c(p1), e.fma(hi, e.c(p2), e.fma(hi, e.c(p1), e.neg(r))))
    r, r_lo = e.fast_two_sum(r, r_lo)
    r = e.select(negative, e.neg(r), r)
    r_lo = e.select(negative, e.neg(r_lo), r_lo)
    x_negative = e.cmp("<", x, e.c(0.0))
    q = b.select(x_negative, b.neg(q), q)
    return q, e.select(x_negative, e.neg(r), r), e.select(x_negative, e.neg(r_lo), r_lo)


def reduce(e: Emit, x: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value]:
    """``(q, hi, lo)``: ``x = q pi/2 + hi + lo`` (q an i32, only q mod 4 meaningful), for finite
    `x`; the large-argument path runs only where it is needed."""
    b = e.b
    large = e.cmp(">=", e.abs(x), e.c(LARGE))
    with b.if_else(large) as (then, otherwise):
        with then:
            big = _reduce_large(e, x)
            big_block = b.block
        with otherwise:
            small = _reduce_small(e, x)
            small_block = b.block
    out = []
    for big_value, small_value in zip(big, small):
        phi = b.phi(big_value.type)
        phi.add_incoming(big_value, big_block)
        phi.add_incoming(small_value, small_block)
        out.append(phi)
    return out[0], out[1], out[2]


def _sin_cos(e: Emit, hi: ir.Value, lo: ir.Value) -> tuple[ir.Value, ir.Value]:
    """sin and cos of ``hi + lo``, ``|hi| <= pi/4``, ``|lo| <= ulp(hi)``."""
    z = e.mul(hi, hi)
    z_err = e.fma(hi, hi, e.neg(z))
    hz = e.mul(e.c(0.5), z)
    # sin(hi + lo) = hi + hi z P(z) + lo (1 - z/2)
    sin = e.add(hi, e.fma(e.mul(hi, z), e.horner(z, _SIN), e.fma(e.neg(hz), lo, lo)))
    # cos(hi + lo) = 1 - z/2 + z**2 P(z) - hi lo, with 1 - z/2 split as w + ((1 - w) - z/2)
    w = e.sub(e.c(1.0), hz)
    w_err = e.sub(e.sub(e.c(1.0), w), hz)
    small = e.fma(e.mul(z, z), e.horner(z, _COS), e.neg(e.fma(hi, lo, e.mul(e.c(0.5), z_err))))
    cos = e.add(w, e.add(w_err, small))
    return sin, cos


def _quadrant(e: Emit, q: ir.Value, values: list[ir.Value]) -> ir.Value:
    """``values[q mod 4]``."""
    b = e.b
    q = b.and_(q, ir.Constant(I32, 3))
    result = values[3]
    for k in (2, 1, 0):
        result = e.select(b.icmp_unsigned("==", q, ir.Constant(I32, k)), values[k], result)
    return result


def _sin_or_cos(e: Emit, x: ir.Value, cosine: bool) -> ir.Value:
    finite = e.cmp("<", e.abs(x), e.c(float("inf")))
    q, hi, lo = reduce(e, e.select(finite, x, e.c(0.0)))
    sin, cos = _sin_cos(e, hi, lo)
    if cosine:
        result = _quadrant(e, q, [cos, e.neg(sin), e.neg(cos), sin])
    else:
        result = _quadrant(e, q, [sin, cos, e.neg(sin), e.neg(cos)])
        # sin x rounds to x below 2**-26; this also keeps -0 and subnormals exact
        result = e.select(e.cmp("<", e.abs(x), e.c(2.0**-26)), x, result)
    return e.select(finite, result, e.c(float("nan")))


def sin(e: Emit, x: ir.Value) -> ir.Value:
    return _sin_or_cos(e, x, cosine=False)


def cos(e: Emit, x: ir.Value) -> ir.Value:
    return _sin_or_cos(e, x, cosine=True)
