"""A sign check for index expressions: is this index never negative?

Lowered indices are sums and products of loop variables, sizes and constants, so most of them
are non-negative by construction, and an interpreter or a code generator can skip the lower
bounds check for them. The rules are syntactic and ignore integer overflow: ``a + b`` with both
non-negative counts as non-negative although int32 could wrap, which needs values beyond 2**31
that no buffer index reaches.
"""

from __future__ import annotations

from collections.abc import Callable

from ...ir import dtype as dt
from ...ir.expr import Binary, Cast, Const, Expr, Select, Var


def nonnegative(e: Expr, known: Callable[[Var], bool]) -> bool:
    """True if the integer expression `e` is provably >= 0; `known(v)` answers for variables."""
    if e.dtype in dt.UNSIGNED:
        return True
    if isinstance(e, Const):
        return not isinstance(e.value, bool) and e.value >= 0
    if isinstance(e, Var):
        return known(e)
    if isinstance(e, Binary):
        if e.op == "%" and isinstance(e.b, Const) and e.b.value > 0:
            return True
        a, b = nonnegative(e.a, known), nonnegative(e.b, known)
        if e.op == "max":
            return a or b
        if e.op in ("+", "*", "//", "%", "min", ">>", "&"):
            return a and b
        return False
    if isinstance(e, Select):
        return nonnegative(e.true_value, known) and nonnegative(e.false_value, known)
    if isinstance(e, Cast):
        source = e.value.dtype
        if source == "bool":
            return True
        if not dt.is_int(source):
            return False
        if source in dt.UNSIGNED:
            return dt.bits(e.dtype) > dt.bits(source)
        return dt.bits(e.dtype) >= dt.bits(source) and nonnegative(e.value, known)
    return False
