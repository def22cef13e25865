"""Algorithm expressions as isl quasi-affine text.

isl represents exactly the integer expressions built from variables and constants with ``+``,
``-``, multiplication by a constant, floor division and modulo by a positive constant, ``min`` and
``max``; conditions are comparisons of those joined by and/or/not. Anything else (a product of two
variables, an index read from a tensor) is `NonAffine`: the caller decides whether that is an error
or a condition to over-approximate.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..ir import dtype as dt
from ..ir.expr import Binary, Cast, Compare, Const, Expr, Unary, Var
from ..ir.visit import walk


class NonAffine(Exception):
    """`expr` (a sub-expression) has no quasi-affine form."""

    def __init__(self, expr: Expr) -> None:
        super().__init__(str(expr))
        self.expr = expr


def _constant(e: Expr) -> int | None:
    """The value of an integer expression without variables, else None."""
    if any(isinstance(n, Var) for n in walk(e)):
        return None
    if isinstance(e, Const):
        return int(e.value)
    if isinstance(e, Cast) and dt.is_int(e.dtype):
        return _constant(e.value)
    if isinstance(e, Unary) and e.op == "-":
        inner = _constant(e.a)
        return None if inner is None else -inner
    if isinstance(e, Binary) and e.op in ("+", "-", "*", "//", "%", "min", "max"):
        a, b = _constant(e.a), _constant(e.b)
        if a is None or b is None or (e.op in ("//", "%") and b == 0):
            return None
        return {
            "+": lambda: a + b,
            "-": lambda: a - b,
            "*": lambda: a * b,
            "//": lambda: a // b,
            "%": lambda: a % b,
            "min": lambda: min(a, b),
            "max": lambda: max(a, b),
        }[e.op]()
    return None


def aff_text(e: Expr, names: Mapping[Var, str]) -> str:
    """isl text of the integer expression `e`; `names` gives each variable's isl text."""
    value = _constant(e)
    if value is not None:
        return str(value) if value >= 0 else f"({value})"
    if isinstance(e, Var):
        if e not in names:
            raise NonAffine(e)
        return names[e]
    if isinstance(e, Cast) and dt.is_int(e.dtype) and dt.is_int(e.value.dtype):
        return aff_text(e.value, names)
    if isinstance(e, Unary) and e.op == "-":
        return f"(-{aff_text(e.a, names)})"
    if isinstance(e, Binary):
        if e.op in ("+", "-"):
            return f"({aff_text(e.a, names)} {e.op} {aff_text(e.b, names)})"
        if e.op == "*":
            ca, cb = _constant(e.a), _constant(e.b)
            if ca is not None:
                return f"({ca} * {aff_text(e.b, names)})"
            if cb is not None:
                return f"({cb} * {aff_text(e.a, names)})"
            raise NonAffine(e)
        if e.op in ("//", "%"):
            divisor = _constant(e.b)
            if divisor is None or divisor == 0:
                raise NonAffine(e)
            inner = aff_text(e.a, names)
            if divisor < 0:  # a // -d == (-a) // d and a % -d == -((-a) % d), as Python floors
                inner, divisor = f"(-{inner})", -divisor
                if e.op == "%":
                    return f"(-({inner} mod {divisor}))"
            if e.op == "//":
                return f"floor({inner} / {divisor})"
            return f"({inner} mod {divisor})"
        if e.op in ("min", "max"):
            return f"{e.op}({aff_text(e.a, names)}, {aff_text(e.b, names)})"
    raise NonAffine(e)


_ISL_COMPARE = {"==": "=", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


def cond_text(e: Expr, names: Mapping[Var, str]) -> str:
    """isl text of the condition `e` (comparisons of affine expressions, and/or/not)."""
    if isinstance(e, Const) and e.dtype == "bool":
        return "0 = 0" if e.value else "1 = 0"
    if isinstance(e, Compare) and dt.is_int(e.a.dtype):
        return f"{aff_text(e.a, names)} {_ISL_COMPARE[e.op]} {aff_text(e.b, names)}"
    if isinstance(e, Binary) and e.op in ("and", "or"):
        return f"(({cond_text(e.a, names)}) {e.op} ({cond_text(e.b, names)}))"
    if isinstance(e, Unary) and e.op == "not":
        return f"(not ({cond_text(e.a, names)}))"
    raise NonAffine(e)


def affine_condition(e: Expr) -> bool:
    """Whether `e` is a condition isl holds exactly: a domain restricted by a `where=` of
    this kind has lost precisely the instances where it is false."""
    found = [n for n in walk(e) if isinstance(n, Var)]
    names = {v: f"v{k}" for k, v in enumerate(dict.fromkeys(found))}
    try:
        cond_text(e, names)
    except NonAffine:
        return False
    return True
