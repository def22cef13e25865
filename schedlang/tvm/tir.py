"""``tvm.tir``: the index arithmetic and expression helpers TE algorithms call."""

from __future__ import annotations

from schedlang import all, any, call_packed, const, exp, if_then_else, log, sqrt  # noqa: F401
from schedlang import if_then_else as Select  # noqa: F401, N812


def floordiv(a, b):
    return a // b


def floormod(a, b):
    return a % b


indexdiv, indexmod = floordiv, floormod


def truncdiv(a, b):
    """Division rounded toward zero (C's): the floor quotient, plus one where the remainder
    is not zero and the operands' signs differ."""
    q = a // b
    return if_then_else(_differs(a, b), q + 1, q)


def truncmod(a, b):
    """The remainder of `truncdiv`: it has the sign of `a`."""
    r = a % b
    return if_then_else(_differs(a, b), r - b, r)


def _differs(a, b):
    return all(a % b != 0, any(all(a < 0, b > 0), all(a >= 0, b < 0)))
