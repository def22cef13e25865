"""float32 rounded to bfloat16 by LLVM's own ``fptrunc`` to ``bfloat``, which llvmlite's IR
builder has no type for.

NVPTX lowers the ``fptrunc`` to ``cvt.rn.bf16.f32`` (sm_80 on), and two lanes of a vector to
one ``cvt.rn.bf16x2.f32``. Inline assembly computing the same was opaque to LLVM, which then
kept each rounded half where it was made: in causal attention, where a step's probabilities are
the next step's products' operand (`overlap_products`), it carried the 64 rounded halves of a
thread across the loop, where it carries float16's 64 floats and rounds them after (their
``fptrunc`` sunk to the use), and the bfloat16 kernel had half as many predicated instructions
again as the float16 one from the same loop nest.
"""

from __future__ import annotations

from llvmlite import ir

from ..llvm.types import I16


class _BFloat(ir.Type):
    """LLVM's ``bfloat``, only as the type an ``fptrunc`` produces and a bitcast consumes."""

    def _to_string(self) -> str:
        return "bfloat"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _BFloat)

    def __hash__(self) -> int:
        return hash("bfloat")


BFLOAT = _BFloat()


def round_to_bfloat16(b: ir.IRBuilder, value: ir.Value) -> ir.Value:
    """`value` (a float or a vector of floats) rounded to nearest even bfloat16, as the bits
    of its storage type (``i16`` or a vector of them)."""
    if isinstance(value.type, ir.VectorType):
        count = value.type.count
        rounded = b.fptrunc(value, ir.VectorType(BFLOAT, count))
        return b.bitcast(rounded, ir.VectorType(I16, count))
    return b.bitcast(b.fptrunc(value, BFLOAT), I16)
