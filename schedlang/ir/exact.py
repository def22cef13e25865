"""Integer expressions of the sizes evaluated exactly, in Python integers.

A size expression (``n + 1``, ``n * m``, ``(n - 1) // 4``) evaluated in its dtype wraps or
overflows exactly where a call's sizes are too large for the kernel, which is where its value
must be right to say so. Compiled once into nested closures over a list of size values, so a
call that checks its sizes evaluates them in a few Python operations.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence

from . import dtype as dt
from .expr import Binary, Cast, Const, Expr, Unary, Var

Exact = Callable[[Sequence[int]], int]
_BINARY = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "//": operator.floordiv,
    "%": operator.mod,
    "min": min,
    "max": max,
}


def exact_int(e: Expr, position: Mapping[Var, int]) -> Exact | None:
    """`e` as a function of the values of the sizes (``values[position[v]]`` for size `v`), in
    exact integers; None when `e` involves anything but integer arithmetic of those sizes."""
    if isinstance(e, Const):
        value = int(e.value)
        return lambda values: value
    if isinstance(e, Var):
        k = position.get(e)
        return None if k is None else operator.itemgetter(k)
    if isinstance(e, Cast) and dt.is_int(e.dtype):
        return exact_int(e.value, position)
    if isinstance(e, Unary) and e.op == "-":
        inner = exact_int(e.a, position)
        return None if inner is None else lambda values: -inner(values)
    if isinstance(e, Binary) and e.op in _BINARY:
        a, b = exact_int(e.a, position), exact_int(e.b, position)
        if a is None or b is None:
            return None
        apply = _BINARY[e.op]
        return lambda values: apply(a(values), b(values))
    return None
