"""The 8-bit floats in LLVM, which has no such type: bytes (``i8``) in memory, ``float`` in
arithmetic, and conversions between the two that agree bit for bit with `dt.to_float8` and
ml_dtypes.

Decoding is exact. ``float8_e5m2`` is the upper byte of a ``half``, so its bits shifted into
one are the same number; ``float8_e4m3fn``'s seven magnitude bits shifted into a ``half``
give the number times ``2**-8`` for every finite code (subnormals included: both formats keep
the implicit bit in the same place), and its NaN codes (``0x7F``, ``0xFF``) are picked out.

Encoding is PTX's ``cvt.rn.satfinite``: the magnitude is first clamped to the largest finite
value (an infinity too), so rounding cannot overflow; a normal result is rounded to nearest
even by adding half an ulp less one plus the kept low bit, as for bfloat16; a subnormal one by
adding a power of two whose float32 ulp is the 8-bit format's smallest step, so the float adder
rounds (to nearest even) and the low bits of the sum are the code. NaN gives `dt.NAN8`.

On NVPTX both directions are PTX's own instructions (``cvt.rn.satfinite.e4m3x2.f32`` and
``cvt.rn.f16x2.e4m3x2``, sm_89 and later), which convert two values at once. On every target a
byte that was loaded and is stored again unchanged moves as it is (`encode` knows the floats
`decode` made), so a copy keeps every code, as the reference's does.
"""

from __future__ import annotations

import struct
import weakref

from llvmlite import ir

from ...ir import dtype as dt
from .intrinsics import call_overloaded, function
from .types import F32, HALF, I8, I16, I32, lanes_of, splat, vector_of

# (exponent bits, mantissa bits, bias) of each format
_FORMAT = {"float8_e4m3fn": (4, 3, 7), "float8_e5m2": (5, 2, 15)}
_PTX_NAME = {"float8_e4m3fn": "e4m3x2", "float8_e5m2": "e5m2x2"}
_decoded: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # float -> (dtype, its byte)


def decode(b: ir.IRBuilder, dtype: str, bits: ir.Value) -> ir.Value:
    """Bytes of the 8-bit float `dtype` (a scalar or a vector) as the floats they encode."""
    if _is_nvptx(b):
        value = _pairs(b, bits, F32, lambda pair: _cvt_to_floats(b, dtype, pair))
    else:
        value = _decode_bits(b, dtype, bits)
    _decoded[value] = (dtype, bits)
    return value


def encode(b: ir.IRBuilder, dtype: str, value: ir.Value) -> ir.Value:
    """Floats rounded to the 8-bit float `dtype` (`dt.to_float8`), as bytes."""
    source, loaded = _decoded.get(value, (None, None))
    if source == dtype:
        return loaded
    if _is_nvptx(b):
        return _pairs(b, value, I8, lambda pair: _cvt_to_bytes(b, dtype, pair))
    return _encode_bits(b, dtype, value)


def _is_nvptx(b: ir.IRBuilder) -> bool:
    return b.module.triple.startswith("nvptx")


def _decode_bits(b: ir.IRBuilder, dtype: str, bits: ir.Value) -> ir.Value:
    lanes = lanes_of(bits)
    wide = b.zext(bits, vector_of(I16, lanes))
    if dtype == "float8_e5m2":
        return b.fpext(
            b.bitcast(b.shl(wide, splat(I16, 8, lanes)), vector_of(HALF, lanes)),
            vector_of(F32, lanes),
        )
    sign = b.shl(b.and_(wide, splat(I16, 0x80, lanes)), splat(I16, 8, lanes))
    magnitude = b.and_(wide, splat(I16, 0x7F, lanes))
    half_bits = b.or_(sign, b.shl(magnitude, splat(I16, 7, lanes)))
    scaled = b.fpext(b.bitcast(half_bits, vector_of(HALF, lanes)), vector_of(F32, lanes))
    value = b.fmul(scaled, splat(F32, 256.0, lanes))
    is_nan = b.icmp_unsigned("==", magnitude, splat(I16, 0x7F, lanes))
    return b.select(is_nan, splat(F32, float("nan"), lanes), value)


def _encode_bits(b: ir.IRBuilder, dtype: str, value: ir.Value) -> ir.Value:
    _, mantissa, bias = _FORMAT[dtype]
    lanes = lanes_of(value)
    i32 = vector_of(I32, lanes)
    sign = b.and_(b.lshr(b.bitcast(value, i32), splat(I32, 24, lanes)), splat(I32, 0x80, lanes))
    limit = splat(F32, dt.max_value(dtype), lanes)
    clamped = call_overloaded(b, "llvm.minnum", [call_overloaded(b, "llvm.fabs", [value]), limit])
    bits = b.bitcast(clamped, i32)
    drop = 23 - mantissa
    odd = b.and_(b.lshr(bits, splat(I32, drop, lanes)), splat(I32, 1, lanes))
    rounded = b.add(b.add(bits, splat(I32, (1 << (drop - 1)) - 1, lanes)), odd)
    normal = b.sub(
        b.lshr(rounded, splat(I32, drop, lanes)), splat(I32, (127 - bias) << mantissa, lanes)
    )
    step = 2.0 ** (24 - bias - mantissa)  # its float32 ulp is the smallest subnormal
    summed = b.bitcast(b.fadd(clamped, splat(F32, step, lanes)), i32)
    subnormal = b.sub(summed, splat(I32, _float_bits(step), lanes))
    tiny = b.fcmp_ordered("<", clamped, splat(F32, 2.0 ** (1 - bias), lanes))
    code = b.or_(b.select(tiny, subnormal, normal), sign)
    is_nan = b.fcmp_unordered("uno", value, value)
    return b.trunc(b.select(is_nan, splat(I32, dt.NAN8, lanes), code), vector_of(I8, lanes))


def _cvt_to_bytes(b: ir.IRBuilder, dtype: str, pair: tuple[ir.Value, ir.Value]) -> ir.Value:
    """Two floats as two bytes (a ``<2 x i8>``): the instruction puts its first operand in
    the high byte."""
    name = f"llvm.nvvm.ff.to.{_PTX_NAME[dtype]}.rn"
    cvt = function(b.module, name, I16, [F32, F32])
    return b.bitcast(b.call(cvt, [pair[1], pair[0]]), ir.VectorType(I8, 2))


def _cvt_to_floats(b: ir.IRBuilder, dtype: str, pair: tuple[ir.Value, ir.Value]) -> ir.Value:
    """Two bytes as two floats (a ``<2 x float>``), through the halves PTX gives."""
    name = f"llvm.nvvm.{_PTX_NAME[dtype]}.to.f16x2.rn"
    cvt = function(b.module, name, ir.VectorType(HALF, 2), [I16])
    packed = b.insert_element(ir.Constant(ir.VectorType(I8, 2), ir.Undefined), pair[0], _at(0))
    packed = b.insert_element(packed, pair[1], _at(1))
    halves = b.call(cvt, [b.bitcast(packed, I16)])
    return b.fpext(halves, ir.VectorType(F32, 2))


def _pairs(b: ir.IRBuilder, value: ir.Value, element: ir.Type, convert) -> ir.Value:
    """`convert` applied to the lanes of `value` two at a time (a scalar pairs with a zero),
    the results gathered into a value of `element`s with `value`'s lane count."""
    lanes = lanes_of(value)
    scalar = value.type.element if lanes is not None else value.type
    items = [value] if lanes is None else [b.extract_element(value, _at(k)) for k in range(lanes)]
    if len(items) % 2:
        items.append(ir.Constant(scalar, 0))
    results = []
    for k in range(0, len(items), 2):
        pair = convert((items[k], items[k + 1]))
        results += [b.extract_element(pair, _at(0)), b.extract_element(pair, _at(1))]
    if lanes is None:
        return results[0]
    out = ir.Constant(ir.VectorType(element, lanes), ir.Undefined)
    for k in range(lanes):
        out = b.insert_element(out, results[k], _at(k))
    return out


def _float_bits(value: float) -> int:
    return struct.unpack("<I", struct.pack("<f", value))[0]


def _at(k: int) -> ir.Constant:
    return ir.Constant(I32, k)
