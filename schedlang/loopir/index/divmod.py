"""Floor division and modulo by a constant that the loop bounds make trivial.

Packed layouts and fused loops index with ``(32 * jo + ji) // 32`` and ``% 32``; with ``ji`` a
loop variable in ``[0, 32)`` these are ``jo`` and ``ji``. LLVM cannot see that (it does not know
the loop bounds when it vectorizes), so the index stays a division per lane and contiguous
accesses become gathers. This pass rewrites them using the constant bounds of the loops around.
"""

from __future__ import annotations

from ...ir import dtype as dt
from ...ir.expr import Binary, Const, Expr, Unary, Var
from ..core.nodes import For, Let, Stmt
from ..core.visit import Memo, expr_children, rebuild_stmt, transform_expr, walk_expr

Range = tuple[int, int]  # inclusive


def simplify_divisions(stmt: Stmt) -> Stmt:
    """`stmt` with ``e // d`` and ``e % d`` (d a positive constant) rewritten where ``e`` is
    ``d * q + r`` with ``r`` provably in ``[0, d)`` given the constant bounds of the loops
    around: then ``e // d = q`` and ``e % d = r``. Exact for floor semantics; everything else
    is left as it is."""
    return _Pass().visit(stmt, {}, {})


class _Pass:
    """One `simplify_divisions` call. Few expressions divide, so whether a node has a
    division or modulo at all is kept for the whole pass (unrolled copies share most of their
    subtrees), and only the expressions that do are rewritten."""

    def __init__(self) -> None:
        self.divides: dict[int, tuple[Expr, bool]] = {}

    def has_division(self, e: Expr) -> bool:
        if type(e) in (Var, Const):
            return False
        hit = self.divides.get(id(e))
        if hit is not None:
            return hit[1]
        found = isinstance(e, Binary) and e.op in ("//", "%")
        found = found or any(self.has_division(kid) for kid in expr_children(e))
        self.divides[id(e)] = (e, found)
        return found

    def visit(self, s: Stmt, ranges: dict[Var, Range], memo: Memo) -> Stmt:
        """`s` rewritten under the loop `ranges` around it; `memo` holds the expressions
        already rewritten under the same ranges."""
        inner = ranges
        if isinstance(s, For) and isinstance(s.min, Const) and isinstance(s.extent, Const):
            low, count = int(s.min.value), int(s.extent.value)
            if count > 0:
                inner = {**ranges, s.var: (low, low + count - 1)}
        elif isinstance(s, Let):
            found = _range(s.value, ranges)
            if found is not None:
                inner = {**ranges, s.var: found}
        if inner is not ranges:
            memo = {}

        def ex(e: Expr) -> Expr:
            if not self.has_division(e):
                return e
            return transform_expr(e, lambda node: _fold(node, inner), memo)

        return rebuild_stmt(s, ex, lambda child: self.visit(child, inner, memo))


def _fold(e: Expr, ranges: dict[Var, Range]) -> Expr | None:
    if not (isinstance(e, Binary) and e.op in ("//", "%") and dt.is_int(e.dtype)):
        return None
    if not (isinstance(e.b, Const) and int(e.b.value) > 0):
        return None
    d = int(e.b.value)
    terms = linear_terms(e.a, 1, opaque=True)
    if terms is None:
        return None
    quotient: list[tuple[Expr | None, int]] = []
    remainder: list[tuple[Expr | None, int]] = []
    for term, k in terms:
        if k // d:
            quotient.append((term, k // d))
        if k % d:
            remainder.append((term, k % d))
    low = high = 0
    for term, k in remainder:
        span = (1, 1) if term is None else _range(term, ranges)
        if span is None:
            return None
        low, high = low + k * span[0], high + k * span[1]
    if low < 0 or high >= d:
        return None
    return _sum(quotient if e.op == "//" else remainder, e.dtype)


def linear_terms(e: Expr, sign: int, opaque: bool = False) -> list[tuple[Expr | None, int]] | None:
    """``e`` as ``[(term, coefficient)]`` (None for the constant term), or None. With
    `opaque`, an index subexpression that is not a sum or a multiple (``x % 2``) is a term of
    its own, where otherwise only variables are: a multiple of ``d`` drops out of ``e % d``
    whatever it is. Only index arithmetic of loop variables and sizes, which the lowering
    assumes does not overflow; a value loaded from memory may (``(A[i] * 4 + j) // 4`` wraps
    in int32, and is not ``A[i]``)."""
    if isinstance(e, Const):
        return [(None, sign * int(e.value))]
    if isinstance(e, Binary) and e.op in ("+", "-"):
        left = linear_terms(e.a, sign, opaque)
        right = linear_terms(e.b, sign if e.op == "+" else -sign, opaque)
        return None if left is None or right is None else left + right
    if isinstance(e, Unary) and e.op == "-":
        return linear_terms(e.a, -sign, opaque)
    if isinstance(e, Binary) and e.op == "*" and isinstance(e.a, Const):
        return linear_terms(e.b, sign * int(e.a.value), opaque)
    if isinstance(e, Binary) and e.op == "*" and isinstance(e.b, Const):
        return linear_terms(e.a, sign * int(e.b.value), opaque)
    if isinstance(e, Var) or (opaque and _index_arithmetic(e)):
        return [(e, sign)]
    return None


def _index_arithmetic(e: Expr) -> bool:
    return dt.is_int(e.dtype) and all(type(n) in _INDEX_NODES for n in walk_expr(e))


_INDEX_NODES = (Var, Const, Binary, Unary)


def _range(e: Expr, ranges: dict[Var, Range]) -> Range | None:
    terms = linear_terms(e, 1)
    if terms is None:
        return None
    low = high = 0
    for term, k in terms:
        span = (1, 1) if term is None else ranges.get(term)
        if span is None:
            return None
        a, b = k * span[0], k * span[1]
        low, high = low + min(a, b), high + max(a, b)
    return low, high


def _sum(terms: list[tuple[Expr | None, int]], dtype: str) -> Expr:
    result: Expr | None = None
    constant = 0
    for term, k in terms:
        if term is None:
            constant += k
            continue
        part = term if k == 1 else Binary("*", Const(k, dtype), term, dtype)
        result = part if result is None else Binary("+", result, part, dtype)
    if result is None:
        return Const(constant, dtype)
    return result if constant == 0 else Binary("+", result, Const(constant, dtype), dtype)
