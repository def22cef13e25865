"""Float-to-integer conversion on NVPTX with PTX's own saturating instruction.

PTX's ``cvt.rzi`` into a 32- or 64-bit integer already does what `dt.float_to_int` asks:
truncation toward zero, results clamped to the destination's range, NaN to 0 (but to
``1 << (bits - 1)`` from a double or into 64 bits, so those take one select). LLVM's NVPTX
backend does not know that and expands ``llvm.fptosi.sat.i32.f32`` into ``cvt.rzi`` plus three
compares and three selects (seven SASS instructions on sm_90 where ``F2I`` alone is one); the
``llvm.nvvm.*2*.rz`` intrinsics are ``cvt.rzi`` alone. Into 8 and 16 bits the 32-bit conversion
is clamped with integer min and max (three instructions, where the generic expansion takes
five). Vectors, which the backend splits into lanes anyway, keep the generic intrinsics.
"""

from __future__ import annotations

from llvmlite import ir

from ...ir import dtype as dt
from ..llvm.arith import float_to_int as generic_float_to_int
from ..llvm.arith import splat_like
from ..llvm.intrinsics import call_overloaded, function
from ..llvm.types import F64, is_signed, lanes_of


def float_to_int(b: ir.IRBuilder, value: ir.Value, dtype: str) -> ir.Value:
    """`value` (a float or double) converted to the integer `dtype`, saturating."""
    if lanes_of(value) is not None:
        return generic_float_to_int(b, value, dtype)
    signed, bits = is_signed(dtype), dt.bits(dtype)
    width = 64 if bits == 64 else 32
    source = "d" if value.type == F64 else "f"
    name = f"llvm.nvvm.{source}2{'' if signed else 'u'}{'ll' if width == 64 else 'i'}.rz"
    converted = b.call(function(b.module, name, ir.IntType(width), [value.type]), [value])
    if width == 64 or source == "d":
        is_nan = b.fcmp_unordered("uno", value, value)
        converted = b.select(is_nan, splat_like(0, converted), converted)
    if bits == width:
        return converted
    if signed:
        converted = _bound(b, "llvm.smax", converted, dt.min_value(dtype))
        converted = _bound(b, "llvm.smin", converted, dt.max_value(dtype))
    else:
        converted = _bound(b, "llvm.umin", converted, dt.max_value(dtype))
    return b.trunc(converted, ir.IntType(bits))


def _bound(b: ir.IRBuilder, name: str, value: ir.Value, limit: int) -> ir.Value:
    return call_overloaded(b, name, [value, splat_like(limit, value)])
