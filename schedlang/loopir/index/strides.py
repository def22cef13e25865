"""How an index moves when one variable (a vector's lane) steps by one.

A vectorized access is one wide load or store when its index is ``uniform + 1 * lane`` along
the last dimension: the code generators ask that of every access in a vectorized loop
(`codegen.llvm.lanes`), and the pipeline pass of the copies it turns into asynchronous ones
(`pipeline`).
"""

from __future__ import annotations

from ...ir import dtype as dt
from ...ir.expr import Binary, Cast, Const, Expr, Var, const
from ..core.visit import substitute_expr, walk_expr
from .divmod import linear_terms


def depends_on(e: Expr, var: Var) -> bool:
    return any(node is var for node in walk_expr(e))


def lane_stride(e: Expr, lane: Var, lanes: int | None = None) -> int | None:
    """The constant c with ``e = uniform + c * lane``, or None when `e` is not of that form.

    Knowing that the lane stays below `lanes`, ``(b + lane) % m`` with ``b`` a multiple of
    ``m >= lanes`` is ``b % m + lane`` too (the clamped index of a box filled past the end of
    its tensor, ``min(b + l, n - 8 + (b + l) % 8)``), and ``(b + lane) // m`` with ``b`` a
    multiple of `lanes` and ``m`` one too is ``b // m``, the same for every lane (a pair of
    a fragment's columns in one packed byte, under one group's scale)."""
    if not depends_on(e, lane):
        return 0
    if e is lane:
        return 1
    if isinstance(e, Binary) and e.op in ("+", "-"):
        a, b = lane_stride(e.a, lane, lanes), lane_stride(e.b, lane, lanes)
        if a is None or b is None:
            return None
        return a + b if e.op == "+" else a - b
    if isinstance(e, Binary) and e.op in ("min", "max"):
        # min(u + c * lane, v + c * lane) = min(u, v) + c * lane: a clamped vector
        a, b = lane_stride(e.a, lane, lanes), lane_stride(e.b, lane, lanes)
        return a if a is not None and a == b else None
    if isinstance(e, Binary) and e.op == "*":
        for factor, other in ((e.a, e.b), (e.b, e.a)):
            if isinstance(factor, Const):
                stride = lane_stride(other, lane, lanes)
                return None if stride is None else int(factor.value) * stride
        return None
    if isinstance(e, Binary) and e.op == "%" and lanes is not None:
        return _lane_mod(e, lane, lanes)
    if isinstance(e, Binary) and e.op == "//" and lanes is not None:
        return _lane_div(e, lane, lanes)
    if isinstance(e, Cast) and e.value.dtype in dt.SIGNED and e.dtype in dt.SIGNED:
        if dt.bits(e.dtype) >= dt.bits(e.value.dtype):
            return lane_stride(e.value, lane, lanes)
    return None


def _lane_mod(e: Binary, lane: Var, lanes: int) -> int | None:
    if not isinstance(e.b, Const) or int(e.b.value) < lanes:
        return None
    whole = _multiple(e.a, lane, int(e.b.value))
    return 1 if whole and lane_stride(e.a, lane, lanes) == 1 else None


def _lane_div(e: Binary, lane: Var, lanes: int) -> int | None:
    """0 where ``(b + lane) // m`` stays in one quotient: ``b`` and ``m`` multiples of
    `lanes`, so ``b % m + lane < m``."""
    if not isinstance(e.b, Const) or int(e.b.value) <= 0 or int(e.b.value) % lanes:
        return None
    whole = _multiple(e.a, lane, lanes)
    return 0 if whole and lane_stride(e.a, lane, lanes) == 1 else None


def _multiple(e: Expr, lane: Var, m: int) -> bool:
    """Whether `e` at lane 0 is a multiple of `m` whatever its variables."""
    terms = linear_terms(substitute_expr(e, {lane: const(0, lane.dtype)}), 1, opaque=True)
    return terms is not None and all(k % m == 0 for _, k in terms)
