"""The derivative of an expression with respect to one element of a tensor it reads.

`gradient` needs, for each compute, how its body changes when one element ``X[a]`` of an
input changes. Every read ``X[f(o)]`` of the body contributes ``f(o) == a`` (an indicator: the
read is of that element or it is not), so the derivative is an ordinary expression of the
body's own axes and of `a`, made of the chain rule over the body's arithmetic and math calls.
Index arithmetic (integers, conditions) has no derivative: its result is piecewise constant in
the element, and so are ``floor``, ``ceil`` and ``round``. A branch of ``if_then_else`` keeps its
condition, so a guarded read stays guarded.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..errors import AlgorithmError
from . import dtype as dt
from .expr import (
    Binary,
    Call,
    Cast,
    Compare,
    Const,
    Expr,
    Read,
    Reduce,
    Select,
    Unary,
    Var,
    cast,
    const,
    logical,
    select,
)
from .math import cos, exp, exp2, log, pow, rsqrt, sigmoid, sin, sqrt, tanh
from .tensor import Operation

# Functions that are constant between their jumps: their derivative is zero where it exists.
_STEPS = ("floor", "ceil", "round")


def derivative(e: Expr, tensor: Operation, element: Sequence[Expr]) -> Expr | None:
    """d e / d tensor[element], or None where it is zero everywhere (no read of `tensor` is
    in a differentiable position). `e` is a body without its reduction (see `gradient`)."""
    return _Derivative(tensor, tuple(element)).of(e)


class _Derivative:
    def __init__(self, tensor: Operation, element: tuple[Expr, ...]) -> None:
        self.tensor = tensor
        self.element = element

    def of(self, e: Expr) -> Expr | None:
        if not dt.is_float(e.dtype):
            return None
        if isinstance(e, (Const, Var)):
            return None
        if isinstance(e, Read):
            return self._read(e)
        if isinstance(e, Unary):
            da = self.of(e.a)
            return None if da is None else -da
        if isinstance(e, Cast):
            da = self.of(e.value)
            return None if da is None else cast(da, e.dtype)
        if isinstance(e, Select):
            dt_, df = self.of(e.true_value), self.of(e.false_value)
            if dt_ is None and df is None:
                return None
            zero = const(0.0, e.dtype)
            return select(e.cond, zero if dt_ is None else dt_, zero if df is None else df)
        if isinstance(e, Binary):
            return self._binary(e)
        if isinstance(e, Call):
            return self._call(e)
        if isinstance(e, Reduce):
            raise AlgorithmError(f"gradient: a reduction inside an expression ('{e}')")
        raise AlgorithmError(f"gradient: cannot differentiate '{e}' ({type(e).__name__})")

    def _read(self, e: Read) -> Expr | None:
        if e.tensor.op is not self.tensor:
            return None
        same = logical("and", tuple(Compare("==", i, a) for i, a in zip(e.indices, self.element)))
        return select(same, const(1.0, e.dtype), const(0.0, e.dtype))

    def _binary(self, e: Binary) -> Expr | None:
        a, b = e.a, e.b
        da, db = self.of(a), self.of(b)
        if da is None and db is None:
            return None
        if e.op in ("+", "-"):
            if db is None:
                return da
            if da is None:
                return db if e.op == "+" else -db
            return da + db if e.op == "+" else da - db
        if e.op == "*":
            return _sum(None if da is None else da * b, None if db is None else a * db)
        if e.op == "/":
            return _sum(None if da is None else da / b, None if db is None else -(a * db) / (b * b))
        if e.op in ("max", "min"):
            zero = const(0.0, e.dtype)
            first = Compare(">=" if e.op == "max" else "<=", a, b)
            return select(first, zero if da is None else da, zero if db is None else db)
        if e.op == "//":
            return None
        if e.op == "%":  # a - b * floor(a / b)
            return _sum(da, None if db is None else -(Binary("//", a, b, e.dtype) * db))
        raise AlgorithmError(f"gradient: cannot differentiate the operator {e.op!r} in '{e}'")

    def _call(self, e: Call) -> Expr | None:
        if e.name in _STEPS:
            return None
        ds = [self.of(a) for a in e.args]
        if all(d is None for d in ds):
            return None
        x = e.args[0]
        dx = ds[0]
        if e.name == "fma":
            a, b, _ = e.args
            da, db, dc = ds
            return _sum(None if da is None else da * b, None if db is None else a * db, dc)
        if e.name == "pow":
            y, dy = e.args[1], ds[1]
            by_x = None if dx is None else dx * y * pow(x, y - const(1.0, e.dtype))
            return _sum(by_x, None if dy is None else dy * e * log(x))
        rule = _RULES.get(e.name)
        if rule is None:
            raise AlgorithmError(f"gradient: no derivative is known for {e.name}() in '{e}'")
        return dx * rule(x, e)


def _sum(*terms: Expr | None) -> Expr | None:
    present = [t for t in terms if t is not None]
    if not present:
        return None
    total = present[0]
    for t in present[1:]:
        total = total + t
    return total


def _abs_slope(x: Expr, _: Expr) -> Expr:
    return select(Compare(">=", x, const(0.0, x.dtype)), const(1.0, x.dtype), const(-1.0, x.dtype))


def _c(value: float, like: Expr) -> Expr:
    return const(value, like.dtype)


# f'(x) for f(x) = y, in terms of x and y.
_RULES = {
    "exp": lambda x, y: y,
    "exp2": lambda x, y: y * _c(math.log(2.0), x),
    "fast_exp2": lambda x, y: exp2(x) * _c(math.log(2.0), x),
    "log": lambda x, y: _c(1.0, x) / x,
    "log2": lambda x, y: _c(1.0 / math.log(2.0), x) / x,
    "sqrt": lambda x, y: _c(0.5, x) / sqrt(x),
    "rsqrt": lambda x, y: _c(-0.5, x) * rsqrt(x) / x,
    "tanh": lambda x, y: _c(1.0, x) - tanh(x) * tanh(x),
    "sigmoid": lambda x, y: sigmoid(x) * (_c(1.0, x) - sigmoid(x)),
    "erf": lambda x, y: _c(2.0 / math.sqrt(math.pi), x) * exp(-(x * x)),
    "sin": lambda x, y: cos(x),
    "cos": lambda x, y: -sin(x),
    "abs": _abs_slope,
}
