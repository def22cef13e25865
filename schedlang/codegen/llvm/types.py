"""How each schedlang dtype lives in LLVM: its type in memory and its type in arithmetic.

The two differ for five dtypes. ``bool`` is ``i1`` in arithmetic and a byte in memory.
``float16``, ``bfloat16`` and the 8-bit floats are computed in ``float`` and rounded back after
every operation, which is exactly what numpy and ml_dtypes do (and `dt.to_float8` for the 8-bit
ones), so results agree bit for bit with the reference evaluator; in memory they are ``half``,
the upper 16 bits of a ``float`` (``i16``) and a byte (`float8`). bfloat16 rounding is done with
integer operations rather than LLVM's ``bfloat`` type, whose support varies between backends;
NVPTX, which lowers it to one instruction, rounds through it (`nvptx.bfloat`).
"""

from __future__ import annotations

import struct

from llvmlite import ir

from ...errors import InternalError
from ...ir import dtype as dt

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
F32 = ir.FloatType()
F64 = ir.DoubleType()
HALF = ir.HalfType()
PTR = ir.PointerType()

HALF_FLOATS = ("float16", "bfloat16")
NARROW_FLOATS = (*HALF_FLOATS, *dt.FLOAT8)  # computed in float, rounded after each operation


def compute_type(dtype: str) -> ir.Type:
    """The scalar type values of `dtype` have in arithmetic."""
    if dtype == "bool":
        return I1
    if dtype == "float64":
        return F64
    if dt.is_float(dtype):
        return F32
    if dt.is_int(dtype):
        return ir.IntType(dt.bits(dtype))
    raise InternalError(f"no LLVM type for dtype {dtype!r}")


def storage_type(dtype: str) -> ir.Type:
    """The scalar type of `dtype` in memory."""
    if dtype == "bool":
        return I8
    if dtype == "float16":
        return HALF
    if dtype == "bfloat16":
        return I16
    if dt.is_float8(dtype):
        return I8
    return compute_type(dtype)


def is_signed(dtype: str) -> bool:
    return dtype in dt.SIGNED


def vector_of(t: ir.Type, lanes: int | None) -> ir.Type:
    return t if lanes is None else ir.VectorType(t, lanes)


def lanes_of(value: ir.Value) -> int | None:
    """The vector width of `value`, None for a scalar."""
    return value.type.count if isinstance(value.type, ir.VectorType) else None


def constant(dtype: str, value: object, lanes: int | None = None) -> ir.Constant:
    """`value` as a constant of `dtype`'s compute type (a vector of `lanes` copies if given)."""
    t = compute_type(dtype)
    if dtype == "bool":
        scalar = ir.Constant(t, int(bool(value)))
    elif dt.is_float(dtype):
        scalar = ir.Constant(t, float(_rounded(dtype, float(value))))
    else:
        scalar = ir.Constant(t, int(value) & ((1 << dt.bits(dtype)) - 1))
    if lanes is None:
        return scalar
    return ir.Constant(ir.VectorType(t, lanes), [scalar] * lanes)


def _rounded(dtype: str, value: float) -> float:
    """`value` as `dtype` stores it (constants of narrow floats are rounded like their values)."""
    if dtype in NARROW_FLOATS or dtype == "float32":
        return float(dt.convert(value, dtype))
    return value


def round_half(b: ir.IRBuilder, dtype: str, value: ir.Value, storage=None) -> ir.Value:
    """A float computed for a 16- or 8-bit `dtype`, rounded to it (and kept in float), by
    `storage` (a target's `to_storage`) or the generic conversion to its bits."""
    if dtype == "float16":
        return b.fpext(b.fptrunc(value, vector_of(HALF, lanes_of(value))), value.type)
    if dtype == "bfloat16" or dt.is_float8(dtype):
        return from_storage(b, dtype, (storage or to_storage)(b, dtype, value))
    return value


def to_storage(b: ir.IRBuilder, dtype: str, value: ir.Value) -> ir.Value:
    """A compute value of `dtype` converted to its memory representation."""
    lanes = lanes_of(value)
    if dtype == "bool":
        return b.zext(value, vector_of(I8, lanes))
    if dtype == "float16":
        return b.fptrunc(value, vector_of(HALF, lanes))
    if dtype == "bfloat16":
        loaded = bfloat_bits(value, b)
        return loaded if loaded is not None else _float_to_bfloat(b, value, lanes)
    if dt.is_float8(dtype):
        from . import float8  # which builds on this module

        return float8.encode(b, dtype, value)
    return value


def bfloat_bits(value: ir.Value, b: ir.IRBuilder | None = None) -> ir.Value | None:
    """The bfloat16 bits that `value` was widened from (`from_storage`), if it was: storing
    them back needs no rounding. A copy of bfloat16 data then moves its bits as they are, in
    wide loads and stores, as a float16 copy does (LLVM folds fpext and fptrunc, but not the
    integer rounding of a widened value). With a builder `b`, also a select between such values
    or constants that bfloat16 holds exactly, made again between their bits: a masked
    probability, ``select(kept, bfloat16(p), 0)``, was rounded, widened and rounded again."""
    if b is not None and isinstance(value, ir.Instruction) and value.opname == "select":
        cond, yes, no = value.operands
        arms = [_exact_bits(x) for x in (yes, no)]
        if arms[0] is None or arms[1] is None:
            return None
        return b.select(cond, arms[0], arms[1])
    if not (isinstance(value, ir.CastInstr) and value.opname == "bitcast"):
        return None
    paired = _paired_bits(value.operands[0])
    if paired is not None:
        return paired
    shifted = value.operands[0]
    if not (isinstance(shifted, ir.Instruction) and shifted.opname == "shl"):
        return None
    widened = shifted.operands[0]
    if not (isinstance(widened, ir.CastInstr) and widened.opname == "zext"):
        return None
    bits = widened.operands[0]
    return bits if bits.type == vector_of(I16, lanes_of(value)) else None


def _exact_bits(value: ir.Value) -> ir.Value | None:
    """The bfloat16 bits of `value`, a widened bfloat16 or a float constant that bfloat16
    holds exactly (its lower 16 bits zero), or None."""
    bits = bfloat_bits(value)
    if bits is not None or not isinstance(value, ir.Constant):
        return bits
    if not isinstance(value.type, ir.FloatType):
        return None
    word = struct.unpack("<I", struct.pack("<f", value.constant))[0]
    return ir.Constant(I16, word >> 16) if word & 0xFFFF == 0 else None


def from_storage(b: ir.IRBuilder, dtype: str, value: ir.Value) -> ir.Value:
    """A value loaded from memory as `dtype`, converted to its compute type."""
    lanes = lanes_of(value)
    if dtype == "bool":
        return b.icmp_unsigned("!=", value, ir.Constant(value.type, None))
    if dtype == "float16":
        return b.fpext(value, vector_of(F32, lanes))
    if dtype == "bfloat16":
        if lanes is not None and lanes % 2 == 0:
            return b.bitcast(_widened_pairs(b, value, lanes), vector_of(F32, lanes))
        if lanes is None and (half := _half_of_word(b, value)) is not None:
            return b.bitcast(half, F32)
        wide = b.shl(b.zext(value, vector_of(I32, lanes)), splat(I32, 16, lanes))
        return b.bitcast(wide, vector_of(F32, lanes))
    if dt.is_float8(dtype):
        from . import float8  # which builds on this module

        return float8.decode(b, dtype, value)
    return value


def _widened_pairs(b: ir.IRBuilder, bits: ir.Value, lanes: int) -> ir.Value:
    """bfloat16 `bits` (an even number of lanes) as float32 bits, from the 32-bit words that
    hold them two by two: the low lane shifted up, the high one masked in place. One
    instruction a lane; widened lane by lane, ptxas extracts each upper half and shifts it
    back, two."""
    words = b.bitcast(bits, ir.VectorType(I32, lanes // 2))
    low = b.shl(words, splat(I32, 16, lanes // 2))
    high = b.and_(words, splat(I32, -0x10000, lanes // 2))
    order = [k // 2 + (lanes // 2) * (k % 2) for k in range(lanes)]  # low 0, high 0, low 1...
    return b.shuffle_vector(low, high, ir.Constant(ir.VectorType(I32, lanes), order))


def _half_of_word(b: ir.IRBuilder, bits: ir.Value) -> ir.Value | None:
    """A lane of bfloat16 bits taken from a vector (a row of registers loaded at once) as
    float32 bits from the 32-bit word that holds it, if it is one: the low lane shifted up,
    the high one masked in place, one instruction. Extracted first, the high lane takes a
    byte permute, a move and a shift."""
    if not isinstance(bits, ir.instructions.ExtractElement):
        return None
    vector, index = bits.operands
    lanes, at = vector.type.count, index.constant if isinstance(index, ir.Constant) else None
    if lanes % 2 or not isinstance(at, int):
        return None
    words = b.bitcast(vector, ir.VectorType(I32, lanes // 2))
    word = b.extract_element(words, ir.Constant(I32, at // 2))
    if at % 2:
        return b.and_(word, ir.Constant(I32, -0x10000))
    return b.shl(word, ir.Constant(I32, 16))


def _paired_bits(wide: ir.Value) -> ir.Value | None:
    """The bits `_widened_pairs` widened, if `wide` is its result."""
    if not (isinstance(wide, ir.ShuffleVector) and isinstance(wide.operands[0], ir.Instruction)):
        return None
    low, high = wide.operands[0], wide.operands[1]
    if not (low.opname == "shl" and isinstance(high, ir.Instruction) and high.opname == "and"):
        return None
    words = low.operands[0]
    if words is not high.operands[0] or not isinstance(words, ir.CastInstr):
        return None
    bits = words.operands[0]
    lanes = wide.type.count
    return bits if bits.type == vector_of(I16, lanes) else None


def _float_to_bfloat(b: ir.IRBuilder, value: ir.Value, lanes: int | None) -> ir.Value:
    """Round-to-nearest-even of a float to bfloat16 bits; NaNs stay (quiet) NaNs."""
    i32 = vector_of(I32, lanes)
    bits = b.bitcast(value, i32)
    odd = b.and_(b.lshr(bits, splat(I32, 16, lanes)), splat(I32, 1, lanes))
    rounded = b.add(b.add(bits, splat(I32, 0x7FFF, lanes)), odd)
    quiet = b.or_(bits, splat(I32, 0x00400000, lanes))
    is_nan = b.fcmp_unordered("uno", value, value)
    chosen = b.select(is_nan, quiet, rounded)
    return b.trunc(b.lshr(chosen, splat(I32, 16, lanes)), vector_of(I16, lanes))


def splat(t: ir.Type, value: int | float, lanes: int | None) -> ir.Constant:
    scalar = ir.Constant(t, value)
    return scalar if lanes is None else ir.Constant(ir.VectorType(t, lanes), [scalar] * lanes)
