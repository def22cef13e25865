"""A bit field of a vector of bytes, ``(int(x) >> s) & m`` (an unpacked int4 nibble), made as
16-bit lanes whose upper byte is a constant: bfloat16's ``0x4300 | q``, the value 128 + q.

Why: the GPU's LLVM target splits vectors of i8 and i32 into lanes. Each lane's byte is
extracted (a byte permute), shifted, masked, or-ed with the bias and the 16-bit results
packed back in pairs (another permute) before bfloat16 arithmetic two lanes an instruction
can read them: about five integer-unit instructions a lane, the unit that bounds an int4
decoding kernel. Here the bytes are shifted once for all lanes (one word), spread into 16-bit
lanes beside the bias byte (one permute per two lanes, its second operand the constant
bytes) and masked (one logic instruction per two lanes): about one instruction a lane.

Two lanes that take two fields of one byte (a byte's two nibbles as the two halves of a
warpgroup fragment's register) are one word: the byte beside a copy of itself moved up, so
that the second field starts at bit 16 (one multiply-add), then one logic instruction that
keeps both fields and sets both bias bytes, where the lanes apart took a shift, a permute and
two logic instructions.
"""

from __future__ import annotations

from llvmlite import ir

from ...ir import dtype as dt
from ...ir.expr import Binary, Cast, Const, Expr, const
from ...loopir.core.visit import substitute_expr
from ...loopir.index.strides import lane_stride
from .types import I16, I32, lanes_of, splat

I8 = ir.IntType(8)


def biased_field(emitter, e: Expr, bias: int, below: int) -> ir.Value | None:
    """``bias << 8 | e`` as a vector of i16 when `e` is ``(int(x) >> s) & m`` with x a
    vector of uint8, the shift s the same for every lane and known to lie in [0, 8) (a
    constant, or ``4 * (k % 2)``: a row's nibble) and the mask m a constant below `below` and
    2^(8 - s) for the largest s (the field lies in its byte); else None."""
    if not (isinstance(e, Binary) and e.op == "&" and dt.is_int(e.dtype)):
        return None
    field, mask = (e.a, e.b) if isinstance(e.b, Const) else (e.b, e.a)
    if not (isinstance(mask, Const) and isinstance(field, Binary) and field.op == ">>"):
        return None
    source = field.a
    if not (
        isinstance(source, Cast)
        and source.value.dtype == "uint8"
        and dt.is_int(source.dtype)
        and dt.bits(source.dtype) > 8
    ):
        return None
    if not emitter.varying(source.value) and emitter.varying(field.b):
        return _two_fields(emitter, source.value, field.b, int(mask.value), bias, below)
    # bytes that differ by lane, shifted alike in every lane: decided before anything is
    # emitted, so that a field not taken here leaves no code behind
    if not emitter.varying(source.value) or emitter.varying(field.b):
        return None
    known = emitter.constant_int(field.b)
    span = (known, known) if known is not None else _span(field.b)
    bits = int(mask.value)
    if span is None or not 0 <= span[0] <= span[1] < 8:
        return None
    if not 0 <= bits < min(below, 1 << (8 - span[1])):
        return None
    x = emitter.value(source.value)
    lanes = lanes_of(x)
    b = emitter.b
    if span[1]:  # the whole vector as one integer: byte k + 1's bits enter byte k's top only
        whole = ir.IntType(8 * lanes)
        amount = emitter.value(field.b) if known is None else ir.Constant(whole, known)
        if known is None:  # a row's nibble: the same for every lane, known only at run time
            width = amount.type.width
            amount = b.zext(amount, whole) if width < whole.width else b.trunc(amount, whole)
        x = b.bitcast(b.lshr(b.bitcast(x, whole), amount), x.type)
    order = [i for lane in range(lanes) for i in (lane, lanes)]  # byte, then the bias byte
    picks = ir.Constant(ir.VectorType(I32, 2 * lanes), order)
    spread = b.shuffle_vector(x, splat(I8, bias, lanes), picks)
    halves = b.bitcast(spread, ir.VectorType(I16, lanes))
    return b.and_(halves, splat(I16, bias << 8 | bits, lanes))


def _two_fields(
    emitter, byte: Expr, shift: Expr, bits: int, bias: int, below: int
) -> ir.Value | None:
    """Two lanes' fields of one byte (a byte's two nibbles, the two halves of a warpgroup
    fragment's register) as one word: the byte beside itself moved up so that lane 1's field
    starts at bit 16 (one shift-and-add), then masked and the bias bytes set (one logic
    instruction on the GPU, `Target.mask_then_set`). The shifts must be constants per lane
    (lane 0's known, the step between lanes too) with both fields inside the byte."""
    if emitter.lanes != 2:
        return None
    step = lane_stride(shift, emitter.lane, 2)
    at_zero = {emitter.lane: const(0, emitter.lane.dtype)}
    first = emitter.constant_int(substitute_expr(shift, at_zero))
    if step is None or first is None or not step:
        return None
    second = first + step
    if not (0 <= first < 8 and 0 <= second < 8):
        return None
    if not 0 <= bits < min(below, 1 << (8 - max(first, second))):
        return None
    b = emitter.b
    x = b.zext(emitter.value(byte), I32)
    low = b.lshr(x, ir.Constant(I32, first)) if first else x
    word = b.or_(low, b.shl(x, ir.Constant(I32, 16 - second)))  # disjoint: bits < 8, >= 9
    fields = emitter.target.mask_then_set(b, word, bits | bits << 16, (bias << 8) * 0x10001)
    return b.bitcast(fields, ir.VectorType(I16, 2))


def _span(e: Expr) -> tuple[int, int] | None:
    """The least and greatest values of the integer `e` from its form alone (constants,
    ``% d``, ``& m``, products by and sums of those), or None."""
    if isinstance(e, Const) and dt.is_int(e.dtype):
        return int(e.value), int(e.value)
    if not isinstance(e, Binary):
        return None
    if e.op in ("%", "&") and isinstance(e.b, Const) and int(e.b.value) > 0:
        return 0, int(e.b.value) - (e.op == "%")
    x, y = _span(e.a), _span(e.b)
    if x is None or y is None:
        return None
    if e.op == "+":
        return x[0] + y[0], x[1] + y[1]
    if e.op == "*":
        ends = [p * q for p in x for q in y]
        return min(ends), max(ends)
    return None
