"""Math functions, elementwise maximum/minimum, and dtype limits.

Transcendental functions take floats: an integer argument is an error rather than a silent
conversion, because the float type decides the precision the user gets.
"""

from __future__ import annotations

from ..errors import AlgorithmError, entry_point
from . import dtype as dt
from .expr import Call, Expr, as_expr, binary, const

# name -> number of arguments; all of these need float arguments.
FLOAT_FUNCTIONS = {
    "exp": 1,
    "exp2": 1,
    "fast_exp2": 1,
    "log": 1,
    "log2": 1,
    "sqrt": 1,
    "rsqrt": 1,
    "tanh": 1,
    "sigmoid": 1,
    "erf": 1,
    "sin": 1,
    "cos": 1,
    "pow": 2,
    "fma": 3,
}
# Defined for integers too (floor/ceil/round of an integer is the integer itself).
NUMERIC_FUNCTIONS = ("abs", "floor", "ceil", "round")
# Defined for integers only.
INTEGER_FUNCTIONS = ("popcount",)


def _float_call(name: str, *args: object) -> Expr:
    # Python scalars take the dtype of the expressions beside them, as in a binary operator.
    exprs = [as_expr(a) for a in args if not isinstance(a, (bool, int, float))]
    like = None
    for e in exprs:
        like = e.dtype if like is None else dt.promote(like, e.dtype)
    exprs = [as_expr(a, like=like) for a in args]
    common = exprs[0].dtype
    for e in exprs[1:]:
        common = dt.promote(common, e.dtype)
    if not dt.is_float(common):
        shown = ", ".join(str(e) for e in exprs)
        raise AlgorithmError(
            f"sl.{name}({shown}) needs float arguments, got {common}: "
            f"convert with .astype('float32')"
        )
    converted = tuple(as_expr(a, like=common).astype(common) for a in args)
    return Call(name, converted, common)


def _numeric_call(name: str, x: object) -> Expr:
    e = as_expr(x)
    if e.dtype == "bool":
        raise AlgorithmError(f"sl.{name}({e}) needs a number, not a bool")
    if name != "abs" and dt.is_int(e.dtype):
        return e
    return Call(name, (e,), e.dtype)


@entry_point
def exp(x: object) -> Expr:
    return _float_call("exp", x)


@entry_point
def exp2(x: object) -> Expr:
    return _float_call("exp2", x)


@entry_point
def fast_exp2(x: object) -> Expr:
    """``2 ** x`` by the GPU's approximate instruction (``ex2.approx.ftz.f32``: a relative error
    below 2**-22, results below 2**-126 flushed to zero), as FlashAttention and Triton compute
    softmax's exponentials; elsewhere, and in float64, `exp2`. The reference computes exp2."""
    return _float_call("fast_exp2", x)


@entry_point
def log(x: object) -> Expr:
    return _float_call("log", x)


@entry_point
def log2(x: object) -> Expr:
    return _float_call("log2", x)


@entry_point
def sqrt(x: object) -> Expr:
    return _float_call("sqrt", x)


@entry_point
def rsqrt(x: object) -> Expr:
    """``1 / sqrt(x)``."""
    return _float_call("rsqrt", x)


@entry_point
def tanh(x: object) -> Expr:
    return _float_call("tanh", x)


@entry_point
def sigmoid(x: object) -> Expr:
    """``1 / (1 + exp(-x))``."""
    return _float_call("sigmoid", x)


@entry_point
def erf(x: object) -> Expr:
    return _float_call("erf", x)


@entry_point
def sin(x: object) -> Expr:
    return _float_call("sin", x)


@entry_point
def cos(x: object) -> Expr:
    return _float_call("cos", x)


@entry_point
def pow(x: object, y: object) -> Expr:  # noqa: A001
    return _float_call("pow", x, y)


@entry_point
def fma(a: object, b: object, c: object) -> Expr:
    """``a * b + c`` rounded once."""
    return _float_call("fma", a, b, c)


@entry_point
def abs(x: object) -> Expr:  # noqa: A001
    return _numeric_call("abs", x)


@entry_point
def floor(x: object) -> Expr:
    return _numeric_call("floor", x)


@entry_point
def ceil(x: object) -> Expr:
    return _numeric_call("ceil", x)


@entry_point
def popcount(x: object) -> Expr:
    """The number of bits set in the integer `x` (of its two's complement for negatives)."""
    e = as_expr(x)
    if not dt.is_int(e.dtype):
        raise AlgorithmError(
            f"sl.popcount({e}) counts the bits of an integer, not of a {e.dtype}: convert "
            "with .astype('int32')"
        )
    return Call("popcount", (e,), e.dtype)


@entry_point
def round(x: object) -> Expr:  # noqa: A001
    """Round to the nearest integer, ties to even (as numpy's ``rint`` and LLVM's ``roundeven``)."""
    return _numeric_call("round", x)


@entry_point
def maximum(a: object, b: object) -> Expr:
    return binary("max", a, b)


@entry_point
def minimum(a: object, b: object) -> Expr:
    return binary("min", a, b)


@entry_point
def max_value(dtype: object) -> Expr:
    name = dt.canonical(dtype)
    return const(dt.max_value(name), name)


@entry_point
def min_value(dtype: object) -> Expr:
    name = dt.canonical(dtype)
    return const(dt.min_value(name), name)
