"""Arithmetic with the reference evaluator's (numpy's) meaning, where LLVM's differs.

LLVM leaves some cases undefined that numpy defines: integer division by zero (numpy: 0),
``INT_MIN // -1`` (numpy wraps), shifts by the bit width or more (numpy: 0, or the sign for a
right shift). Float-to-int conversion out of range, which numpy leaves undefined too, saturates
on every target and in the reference (`schedlang.ir.dtype.float_to_int`). Floor division and
modulo of integers and floats follow numpy's rules (the result's sign follows the divisor).
Every helper works on scalars and vectors alike.
"""

from __future__ import annotations

from llvmlite import ir

from ...ir import dtype as dt
from .intrinsics import call_overloaded, intrinsic
from .types import F32, F64, I32, is_signed, lanes_of, round_half, splat, vector_of


def splat_like(value: int | float, like: ir.Value) -> ir.Constant:
    """The constant `value` with the type of `like` (a vector constant for a vector)."""
    t = like.type
    if isinstance(t, ir.VectorType):
        return ir.Constant(t, [ir.Constant(t.element, value)] * t.count)
    return ir.Constant(t, value)


def int_floordiv(b: ir.IRBuilder, x: ir.Value, y: ir.Value, dtype: str) -> ir.Value:
    if not is_signed(dtype):
        return _guard_zero(b, x, y, lambda d: b.udiv(x, d), dtype)

    def floor(d: ir.Value) -> ir.Value:
        q, r = b.sdiv(x, d), b.srem(x, d)
        adjust = _signs_differ(b, r, d)
        return b.sub(q, b.zext(adjust, q.type))

    return _guard_zero(b, x, y, floor, dtype)


def int_floormod(b: ir.IRBuilder, x: ir.Value, y: ir.Value, dtype: str) -> ir.Value:
    if not is_signed(dtype):
        return _guard_zero(b, x, y, lambda d: b.urem(x, d), dtype, mod=True)

    def floor(d: ir.Value) -> ir.Value:
        r = b.srem(x, d)
        return b.select(_signs_differ(b, r, d), b.add(r, d), r)

    return _guard_zero(b, x, y, floor, dtype, mod=True)


def _signs_differ(b: ir.IRBuilder, r: ir.Value, d: ir.Value) -> ir.Value:
    """True where the remainder is nonzero and its sign differs from the divisor's."""
    zero = splat_like(0, r)
    nonzero = b.icmp_signed("!=", r, zero)
    return b.and_(nonzero, b.icmp_signed("<", b.xor(r, d), zero))


def _guard_zero(b, x, y, divide, dtype: str, mod: bool = False) -> ir.Value:
    """`divide(y)` where LLVM defines it; numpy's results for y == 0 (0) and, for signed
    types, y == -1 (x // -1 == -x wrapping, x % -1 == 0)."""
    if isinstance(y, ir.Constant) and not isinstance(y.type, ir.VectorType):
        value = y.constant
        minus_one = (-1, (1 << dt.bits(dtype)) - 1)
        if value != 0 and not (is_signed(dtype) and value in minus_one):
            return divide(y)
    zero, one = splat_like(0, y), splat_like(1, y)
    special = b.icmp_unsigned("==", y, zero)
    if is_signed(dtype):
        minus_one = b.icmp_signed("==", y, splat_like(-1, y))
        special = b.or_(special, minus_one)
    result = divide(b.select(special, one, y))
    if not is_signed(dtype):
        return b.select(special, zero, result)
    if mod:
        return b.select(special, zero, result)
    negated = b.select(minus_one, b.sub(zero, x), zero)
    return b.select(special, negated, result)


def float_floordiv(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """numpy's ``npy_floor_divide``: floor((x - fmod(x, y)) / y), corrected to the nearest
    integer, with the sign of ``x / y`` for a zero result and ``x / y`` for y == 0."""
    mod = b.frem(x, y)
    div = b.fdiv(b.fsub(x, mod), y)
    zero = splat_like(0.0, x)
    fix = b.and_(
        b.fcmp_ordered("!=", mod, zero),
        b.xor(b.fcmp_ordered("<", y, zero), b.fcmp_ordered("<", mod, zero)),
    )
    div = b.select(fix, b.fsub(div, splat_like(1.0, x)), div)
    floor = call_overloaded(b, "llvm.floor", [div])
    up = b.fcmp_ordered(">", b.fsub(div, floor), splat_like(0.5, x))
    floor = b.select(up, b.fadd(floor, splat_like(1.0, x)), floor)
    quotient = b.fdiv(x, y)
    signed_zero = call_overloaded(b, "llvm.copysign", [zero, quotient])
    result = b.select(b.fcmp_unordered("==", div, zero), signed_zero, floor)
    return b.select(b.fcmp_ordered("==", y, zero), quotient, result)


def float_floormod(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """numpy's ``npy_remainder``: fmod, moved into the divisor's sign; zero takes its sign."""
    mod = b.frem(x, y)
    zero = splat_like(0.0, x)
    fix = b.and_(
        b.fcmp_ordered("!=", mod, zero),
        b.xor(b.fcmp_ordered("<", y, zero), b.fcmp_ordered("<", mod, zero)),
    )
    moved = b.select(fix, b.fadd(mod, y), mod)
    signed_zero = call_overloaded(b, "llvm.copysign", [zero, y])
    result = b.select(b.fcmp_ordered("==", mod, zero), signed_zero, moved)
    return b.select(b.fcmp_ordered("==", y, zero), mod, result)


def shift(b: ir.IRBuilder, op: str, x: ir.Value, y: ir.Value, dtype: str) -> ir.Value:
    """``x << y`` or ``x >> y`` with numpy's meaning for amounts past the width (or negative)."""
    width = splat_like(dt.bits(dtype), y)
    too_far = b.icmp_unsigned(">=", y, width)
    safe = b.select(too_far, splat_like(0, y), y)
    if op == "<<":
        return b.select(too_far, splat_like(0, x), b.shl(x, safe))
    if not is_signed(dtype):
        return b.select(too_far, splat_like(0, x), b.lshr(x, safe))
    sign = b.ashr(x, splat_like(dt.bits(dtype) - 1, x))
    return b.select(too_far, sign, b.ashr(x, safe))


def min_max(b: ir.IRBuilder, op: str, x: ir.Value, y: ir.Value, dtype: str) -> ir.Value:
    """Elementwise min or max; for floats NaN wins, as with numpy's minimum and maximum."""
    if dt.is_float(dtype):
        return call_overloaded(b, "llvm.minimum" if op == "min" else "llvm.maximum", [x, y])
    if dtype == "bool":
        return b.and_(x, y) if op == "min" else b.or_(x, y)
    prefix = "s" if is_signed(dtype) else "u"
    return call_overloaded(b, f"llvm.{prefix}{op}", [x, y])


def cast(b: ir.IRBuilder, value: ir.Value, source: str, target: str, rounding=None) -> ir.Value:
    """`value` (compute type of `source`) converted to `target` as the reference converts it:
    numpy's ``astype``, but saturating from floats to integers."""
    lanes = lanes_of(value)
    if source == target:
        return value
    if target == "bool":
        if dt.is_float(source):
            return b.fcmp_unordered("!=", value, splat_like(0.0, value))
        return b.icmp_unsigned("!=", value, splat_like(0, value))
    if dt.is_float(target):
        return _to_float(b, value, source, target, lanes, rounding)
    return _to_int(b, value, source, target, lanes)


def _to_float(b, value, source: str, target: str, lanes, rounding) -> ir.Value:
    wide = vector_of(F64 if target == "float64" else F32, lanes)
    if dt.is_float(source):
        if source == "float64" and target in ("float16", *dt.FLOAT8):
            converted = _to_float_round_to_odd(b, value, lanes)
        elif value.type == wide:
            converted = value
        elif target == "float64":
            converted = b.fpext(value, wide)
        else:
            converted = b.fptrunc(value, wide)
    elif _small_unsigned(value, source) and wide == vector_of(F32, lanes):
        converted = _small_to_float(b, value, lanes)
    elif source == "bool" or not is_signed(source):
        converted = b.uitofp(value, wide)
    else:
        converted = b.sitofp(value, wide)
    if _exact(value, source, target):
        return converted
    return (rounding or round_half)(b, target, converted)


_SIGNIFICANT_BITS = {"float16": 11, "bfloat16": 8}
_TWO_23 = 1 << 23


def _small_unsigned(value: ir.Value, source: str) -> bool:
    """Whether integer `value` lies in [0, 2^23): an unsigned 8- or 16-bit type, or a value
    masked by such a constant (an unpacked nibble)."""
    if source in ("bool", "uint8", "uint16"):
        return True
    return masked_below(value, _TWO_23)


def masked_below(value: ir.Value, bound: int) -> bool:
    """Whether `value` is an ``and`` with a constant in [0, `bound`) (every lane's, for a
    vector)."""
    if not (isinstance(value, ir.Instruction) and value.opname == "and"):
        return False
    masks = [o for o in value.operands if isinstance(o, ir.Constant)]
    return any(_below(m.constant, bound) for m in masks)


def _below(constant: object, bound: int) -> bool:
    if isinstance(constant, list):  # a vector's lanes
        return bool(constant) and all(_below(lane.constant, bound) for lane in constant)
    return isinstance(constant, int) and 0 <= constant < bound


def _small_to_float(b: ir.IRBuilder, value: ir.Value, lanes) -> ir.Value:
    """A value in [0, 2^23) as float32 by its bits: ``2^23 + v`` is the float whose
    significand holds v, less 2^23, both exact. Two integer-unit instructions where a GPU's
    conversion runs at a quarter of their rate."""
    i32 = vector_of(I32, lanes)
    wide = b.zext(value, i32) if value.type != i32 else value
    bits = b.or_(wide, splat(I32, 0x4B000000, lanes))
    return b.fsub(b.bitcast(bits, vector_of(F32, lanes)), splat(F32, float(_TWO_23), lanes))


def _exact(value: ir.Value, source: str, target: str) -> bool:
    """Whether integer `value` converts to the 16-bit float `target` without rounding: an
    8-bit type, or a value masked by a small constant (an unpacked int4 nibble, ``q & 15``),
    fits its significand. Dequantising kernels convert one such value per weight."""
    bits = _SIGNIFICANT_BITS.get(target)
    if bits is None or dt.is_float(source):
        return False
    if source in ("bool", "int8", "uint8"):
        return bits >= 8
    return masked_below(value, 1 << bits)


def _to_float_round_to_odd(b: ir.IRBuilder, value: ir.Value, lanes) -> ir.Value:
    """A double as a float rounded to odd (toward zero, last bit set if inexact): rounding that
    to half or an 8-bit float then gives the correctly rounded value, with no
    ``__truncdfhf2`` library call."""
    nearest = b.fptrunc(value, vector_of(F32, lanes))
    back = b.fpext(nearest, value.type)
    magnitude = [call_overloaded(b, "llvm.fabs", [x]) for x in (back, value)]
    away = b.fcmp_ordered(">", *magnitude)
    bits = b.bitcast(nearest, vector_of(I32, lanes))
    bits = b.select(away, b.sub(bits, splat_like(1, bits)), bits)
    inexact = b.fcmp_ordered("!=", back, value)
    bits = b.select(inexact, b.or_(bits, splat_like(1, bits)), bits)
    return b.bitcast(bits, vector_of(F32, lanes))


def float_to_int(b: ir.IRBuilder, value: ir.Value, target: str) -> ir.Value:
    """A float (or vector) converted to the integer `target` as `dt.float_to_int` says: toward
    zero, saturated, NaN to 0, which is what ``llvm.fptosi.sat``/``llvm.fptoui.sat`` define
    (plain ``fptosi`` is poison out of range)."""
    t = vector_of(ir.IntType(dt.bits(target)), lanes_of(value))
    name = "llvm.fptosi.sat" if is_signed(target) else "llvm.fptoui.sat"
    return b.call(intrinsic(b.module, name, [t, value.type], t, [value.type]), [value])


def _to_int(b, value, source: str, target: str, lanes) -> ir.Value:
    t = vector_of(ir.IntType(dt.bits(target)), lanes)
    if dt.is_float(source):
        return float_to_int(b, value, target)
    width = value.type.element.width if lanes else value.type.width
    target_width = dt.bits(target)
    if target_width == width:
        return value
    if target_width < width:
        return b.trunc(value, t)
    if source == "bool" or not is_signed(source):
        return b.zext(value, t)
    return b.sext(value, t)
