"""Python's and numpy's own functions applied to expressions.

A user porting numpy code writes ``np.exp(A[i])`` or ``abs(x)`` inside a compute. numpy hands
an expression to `apply_ufunc` (``Expr.__array_ufunc__``): a ufunc with a schedlang equivalent
builds that expression, as ``np.exp(x)`` is ``sl.exp(x)``; any other is an error naming the
ufunc. Python's ``math`` functions and ``float()``/``int()`` ask for a number (``__float__``,
``__int__``), which an expression is not: `not_a_number` says what to write instead.
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import AlgorithmError
from . import math as slmath
from .expr import Expr, binary, compare, power, unary

_BINARY = {
    "add": "+",
    "subtract": "-",
    "multiply": "*",
    "divide": "/",
    "true_divide": "/",
    "floor_divide": "//",
    "remainder": "%",
    "bitwise_and": "&",
    "bitwise_or": "|",
    "bitwise_xor": "^",
    "left_shift": "<<",
    "right_shift": ">>",
}
_COMPARE = {
    "equal": "==",
    "not_equal": "!=",
    "less": "<",
    "less_equal": "<=",
    "greater": ">",
    "greater_equal": ">=",
}
_SAME: dict[str, Callable[..., Expr]] = {
    "exp": slmath.exp,
    "exp2": slmath.exp2,
    "log": slmath.log,
    "log2": slmath.log2,
    "sqrt": slmath.sqrt,
    "tanh": slmath.tanh,
    "sin": slmath.sin,
    "cos": slmath.cos,
    "absolute": slmath.abs,
    "fabs": slmath.abs,
    "floor": slmath.floor,
    "ceil": slmath.ceil,
    "rint": slmath.round,
    "maximum": slmath.maximum,
    "minimum": slmath.minimum,
    "power": power,
    "negative": lambda x: unary("-", x),
    "positive": lambda x: +x,
    "invert": lambda x: unary("~", x),
}


def apply_ufunc(ufunc: object, method: str, inputs: tuple, kwargs: dict) -> Expr:
    """numpy's `ufunc` called on `inputs`, one of them an expression, as schedlang's own."""
    name = getattr(ufunc, "__name__", str(ufunc))
    if method != "__call__" or kwargs:
        extra = ", ".join(kwargs) if kwargs else f"the method .{method}"
        raise AlgorithmError(
            f"numpy.{name} with {extra} cannot build an expression: call it on the "
            f"expressions alone, e.g. numpy.{name}(x), or use schedlang's function"
        )
    if name in _BINARY:
        return binary(_BINARY[name], *inputs)
    if name in _COMPARE:
        return compare(_COMPARE[name], *inputs)
    if name in _SAME:
        return _SAME[name](*inputs)
    raise AlgorithmError(
        f"numpy.{name} has no schedlang equivalent for expressions; inside a compute, use "
        "schedlang's functions: sl.exp, exp2, log, log2, sqrt, rsqrt, tanh, sigmoid, erf, sin, "
        "cos, pow, abs, floor, ceil, round, maximum, minimum, if_then_else"
    )


class NotANumberError(AlgorithmError, TypeError):
    """An expression asked for as a Python number. A `TypeError` too, as Python raises for any
    object that is not a number, so that code trying ``int(extent)`` and catching `TypeError`
    (a symbolic extent) keeps working."""


def not_a_number(e: Expr, kind: str) -> NotANumberError:
    """The error for ``float(e)`` or ``int(e)`` (`kind`), which Python's ``math`` functions
    call: an expression has no value until a kernel runs."""
    conversion = "float32" if kind == "float" else "int32"
    return NotANumberError(
        f"the expression '{e}' is not a Python number ({kind}() of it was asked, as Python's "
        f"math functions do): use schedlang's functions on expressions, e.g. sl.exp(x) for "
        f"math.exp(x), sl.sqrt(x) for math.sqrt(x), and x.astype('{conversion}') to convert"
    )
