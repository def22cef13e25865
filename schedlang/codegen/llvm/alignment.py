"""The byte alignment a memory access is known to have, read off its index expressions.

A GPU moves 8 or 16 bytes in one instruction (``ld.shared.v4``, ``st.global.v2``) only from an
address aligned to that size, so LLVM merges neighbouring accesses, and keeps a vector access
whole, only where it can prove the alignment. Its own proof has to see through generic pointers,
loop induction variables and 64-bit index arithmetic, and often gives up (shared-memory tiles
filled and read four floats at a time stayed scalar). The translator knows more: where each
buffer starts (`Target.buffer_align`) and the affine index expressions themselves, so it states
the alignment on every access: the base alignment, or the element size times the largest power
of two dividing the element offset, whichever is smaller.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...ir import dtype as dt
from ...ir.expr import Binary, Cast, Const, Expr, Unary, Var
from ...loopir.core.nodes import Buffer

_CAP = 1 << 16  # stands for "divisible by anything we would ask about" (an offset of zero)


def access_align(
    buffer: Buffer, indices: tuple[Expr, ...], base: int, known: Mapping[Var, int]
) -> int:
    """Bytes to which ``buffer[indices]`` is aligned when the buffer starts at a multiple of
    `base` bytes; `known` gives the factor of variables that divide by more than 1 (the lane
    variable of a vectorized loop at its first lane)."""
    itemsize = dt.itemsize(buffer.dtype)
    return max(itemsize, min(base, itemsize * _offset_factor(buffer, indices, known)))


def _offset_factor(buffer: Buffer, indices: tuple[Expr, ...], known: Mapping[Var, int]) -> int:
    """The power of two dividing the element offset (`ExprEmitter.offset`'s formula)."""
    if not indices:
        return _CAP
    if buffer.strides is not None:
        return min(
            _product(factor(i, known), factor(s, known)) for i, s in zip(indices, buffer.strides)
        )
    total = factor(indices[0], known)
    for extent, i in zip(buffer.shape[1:], indices[1:]):
        total = min(_product(total, factor(extent, known)), factor(i, known))
    return total


def factor(e: Expr, known: Mapping[Var, int]) -> int:
    """The largest power of two (up to a cap) dividing the integer `e` for every value of its
    variables; a variable divides by 1 unless `known` says more."""
    kind = type(e)
    if kind is Const:
        value = int(e.value)
        return _CAP if value == 0 else min(_CAP, value & -value)
    if kind is Var:
        return known.get(e, 1)
    if isinstance(e, Cast) and dt.is_int(e.dtype) and dt.is_int(e.value.dtype):
        return factor(e.value, known)
    if isinstance(e, Unary) and e.op == "-" and dt.is_int(e.dtype):
        return factor(e.a, known)
    if isinstance(e, Binary) and dt.is_int(e.dtype):
        if e.op in ("+", "-", "min", "max"):
            return min(factor(e.a, known), factor(e.b, known))
        if e.op == "*":
            return _product(factor(e.a, known), factor(e.b, known))
    return 1


def _product(a: int, b: int) -> int:
    return min(_CAP, a * b)
