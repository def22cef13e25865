"""The arithmetic the soft math library is written in: IEEE operations on one scalar type,
with every ``a * b + c`` that is meant as one operation spelled as ``llvm.fma``.

No instruction carries fast-math flags, so LLVM and ptxas keep each rounding as written
(the NVPTX backend emits ``add.rn``/``mul.rn``, which ptxas never contracts); a result is then
the same bit pattern on the host CPU and on the GPU. Comparisons are ordered (false on NaN) and
conversions to integers only see values sanitised first, since LLVM makes an out-of-range
``fptosi`` poison.
"""

from __future__ import annotations

from collections.abc import Sequence

from llvmlite import ir

from ...llvm.intrinsics import call_overloaded

F64 = ir.DoubleType()
F32 = ir.FloatType()
I1 = ir.IntType(1)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
I128 = ir.IntType(128)


class Emit:
    """Operations on doubles (or floats) at the builder's position."""

    def __init__(self, b: ir.IRBuilder, t: ir.Type = F64) -> None:
        self.b = b
        self.t = t

    def c(self, value: float) -> ir.Constant:
        return ir.Constant(self.t, value)

    def add(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.fadd(a, b)

    def sub(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.fsub(a, b)

    def mul(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.fmul(a, b)

    def div(self, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.fdiv(a, b)

    def neg(self, a: ir.Value) -> ir.Value:
        return self.b.fneg(a)

    def fma(self, a: ir.Value, b: ir.Value, c: ir.Value) -> ir.Value:
        return call_overloaded(self.b, "llvm.fma", [a, b, c])

    def intrinsic(self, name: str, *args: ir.Value) -> ir.Value:
        return call_overloaded(self.b, name, list(args))

    def abs(self, a: ir.Value) -> ir.Value:
        return self.intrinsic("llvm.fabs", a)

    def rint(self, a: ir.Value) -> ir.Value:
        return self.intrinsic("llvm.rint", a)

    def trunc(self, a: ir.Value) -> ir.Value:
        return self.intrinsic("llvm.trunc", a)

    def copysign(self, magnitude: ir.Value, sign: ir.Value) -> ir.Value:
        return self.intrinsic("llvm.copysign", magnitude, sign)

    def cmp(self, op: str, a: ir.Value, b: ir.Value) -> ir.Value:
        """An ordered comparison: false when either side is NaN."""
        return self.b.fcmp_ordered(op, a, b)

    def is_nan(self, a: ir.Value) -> ir.Value:
        return self.b.fcmp_unordered("uno", a, a)

    def select(self, cond: ir.Value, a: ir.Value, b: ir.Value) -> ir.Value:
        return self.b.select(cond, a, b)

    def call(self, fn: ir.Function, *args: ir.Value) -> ir.Value:
        return self.b.call(fn, list(args))

    def horner(self, x: ir.Value, coefficients: Sequence[float]) -> ir.Value:
        """``c0 + x*(c1 + x*(c2 + ...))`` with one fma per coefficient."""
        acc = self.c(coefficients[-1])
        for coefficient in reversed(coefficients[:-1]):
            acc = self.fma(acc, x, self.c(coefficient))
        return acc

    def two_sum(self, a: ir.Value, b: ir.Value) -> tuple[ir.Value, ir.Value]:
        """``s + e == a + b`` exactly, ``s`` the rounded sum (Knuth's TwoSum)."""
        s = self.add(a, b)
        bv = self.sub(s, a)
        av = self.sub(s, bv)
        return s, self.add(self.sub(a, av), self.sub(b, bv))

    def fast_two_sum(self, a: ir.Value, b: ir.Value) -> tuple[ir.Value, ir.Value]:
        """`two_sum` where ``|a| >= |b|`` (or `a` is 0) is known (Dekker)."""
        s = self.add(a, b)
        return s, self.sub(b, self.sub(s, a))

    # The bit-level view of doubles.

    def bits(self, a: ir.Value) -> ir.Value:
        return self.b.bitcast(a, I64)

    def from_bits(self, i: ir.Value) -> ir.Value:
        return self.b.bitcast(i, F64)

    def i64(self, value: int) -> ir.Constant:
        return ir.Constant(I64, value)

    def pow2(self, k: ir.Value) -> ir.Value:
        """2**k for an i64 `k` in [-1022, 1023]."""
        return self.from_bits(self.b.shl(self.b.add(k, self.i64(1023)), self.i64(52)))

    def scale(self, p: ir.Value, k: ir.Value) -> ir.Value:
        """``p * 2**k`` rounded once, for i64 `k` in [-2044, 2046] and normal `p`: two exact
        power-of-two factors, so a subnormal result is rounded only by the second product."""
        half = self.b.ashr(k, self.i64(1))
        return self.mul(self.mul(p, self.pow2(half)), self.pow2(self.b.sub(k, half)))
