"""Math calls (`schedlang.ir.math`) with the reference evaluator's numerics.

Functions LLVM has intrinsics for become intrinsics where the target lowers them (the CPU to its
math library or instructions; `Target.native_math` says which); the others (``tanh``, ``erf``,
and on a GPU most of the rest) call the function the target names (`Target.external_math`),
lane by lane for vectors. ``rsqrt`` and ``sigmoid`` are spelled as the
reference spells them, ``1 / sqrt(x)`` and ``1 / (1 + exp(-x))``, and ``fma`` is computed in
double like the reference; 16-bit floats are computed in float and rounded once at the end.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from ...errors import InternalError
from ...ir import dtype as dt
from ...ir.intrinsics import EXTERN
from .arith import splat_like
from .intrinsics import call_overloaded, function, intrinsic
from .types import F64, I1, I32, is_signed, lanes_of, vector_of

if TYPE_CHECKING:
    from .target import Target

_INTRINSICS = {
    "sqrt": "llvm.sqrt",
    "exp": "llvm.exp",
    "exp2": "llvm.exp2",
    "log": "llvm.log",
    "log2": "llvm.log2",
    "sin": "llvm.sin",
    "cos": "llvm.cos",
    "pow": "llvm.pow",
    "abs": "llvm.fabs",
    "floor": "llvm.floor",
    "ceil": "llvm.ceil",
    "round": "llvm.roundeven",
}
EXTERNAL = ("tanh", "erf")


def call_math(
    b: ir.IRBuilder, target: Target, name: str, args: list[ir.Value], dtype: str
) -> ir.Value:
    """``name(*args)`` for compute values of `dtype` (all of one shape: scalars or vectors)."""
    if not dt.is_float(dtype):
        return _integer(b, name, args[0], dtype)
    if name == "fma":
        result = _fma(b, args, dtype)
    elif name == "pow" and _is_two(args[1]):
        # one rounding of x * x, as the correctly rounded power; a target without a native
        # pow would otherwise run its library function (about 40 instructions) for a square
        result = b.fmul(args[0], args[0])
    elif name == "rsqrt":
        result = b.fdiv(splat_like(1.0, args[0]), call_overloaded(b, "llvm.sqrt", args))
    elif name == "sigmoid":
        # exp(-|x|) never overflows: 1 / (1 + e) for x >= 0 and e / (1 + e) below keeps the
        # tiny results of large negative x, which 1 / (1 + exp(-x)) flushes to 0.
        x = args[0]
        e = _function(b, target, "exp", [b.fneg(call_overloaded(b, "llvm.fabs", [x]))], dtype)
        positive = b.fcmp_ordered(">=", x, splat_like(0.0, x))
        numerator = b.select(positive, splat_like(1.0, x), e)
        result = b.fdiv(numerator, b.fadd(splat_like(1.0, x), e))
    elif name == "fast_exp2":
        result = target.fast_exp2(b, args[0], dtype) or _function(b, target, "exp2", args, dtype)
    elif name in _INTRINSICS or name in EXTERNAL:
        result = _function(b, target, name, args, dtype)
    elif name.startswith(EXTERN):  # `call_pure_extern`: the target's function of that C name
        result = _external(b, target.named_math(name[len(EXTERN) :]), args)
    else:
        raise InternalError(f"code generation does not know the math function '{name}'")
    return target.round_half(b, dtype, result)


def _is_two(v: ir.Value) -> bool:
    """Whether `v` is the constant 2.0 (in every lane of a vector)."""
    if not isinstance(v, ir.Constant):
        return False
    lanes = v.constant if isinstance(v.constant, list) else [v]
    return all(isinstance(c, ir.Constant) and c.constant == 2.0 for c in lanes)


def _function(
    b: ir.IRBuilder, target: Target, name: str, args: list[ir.Value], dtype: str
) -> ir.Value:
    """The intrinsic for `name` where the target lowers it, else the target's function."""
    if name in _INTRINSICS and target.native_math(name):
        return call_overloaded(b, _INTRINSICS[name], args)
    work = "float64" if dtype == "float64" else "float32"
    return _external(b, target.external_math(name, work), args)


def _integer(b: ir.IRBuilder, name: str, x: ir.Value, dtype: str) -> ir.Value:
    if name == "popcount":
        return call_overloaded(b, "llvm.ctpop", [x])
    if name != "abs":
        raise InternalError(f"the math function '{name}' of the integer type {dtype}")
    if not is_signed(dtype):
        return x
    fn = intrinsic(b.module, "llvm.abs", [x.type], x.type, [x.type, I1])
    return b.call(fn, [x, ir.Constant(I1, 0)])


def _fma(b: ir.IRBuilder, args: list[ir.Value], dtype: str) -> ir.Value:
    """The reference computes ``a * b + c`` in double: a float product is exact there, so one
    double fma gives the same value; float64 gets a true fused multiply-add."""
    if dtype == "float64":
        return call_overloaded(b, "llvm.fma", args)
    wide_t = vector_of(F64, lanes_of(args[0]))
    wide = [b.fpext(a, wide_t) for a in args]
    return b.fptrunc(call_overloaded(b, "llvm.fma", wide), args[0].type)


def _external(b: ir.IRBuilder, symbol: str, args: list[ir.Value]) -> ir.Value:
    """A call of an external scalar function, once per lane for vector arguments."""
    t = args[0].type
    scalar_t = t.element if isinstance(t, ir.VectorType) else t
    fn = function(b.module, symbol, scalar_t, [scalar_t] * len(args))
    if not isinstance(t, ir.VectorType):
        return b.call(fn, args)
    result = ir.Constant(t, ir.Undefined)
    for lane in range(t.count):
        at = ir.Constant(I32, lane)
        value = b.call(fn, [b.extract_element(a, at) for a in args])
        result = b.insert_element(result, value, at)
    return result
