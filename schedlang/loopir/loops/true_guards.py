"""Guards that hold at every point of the loops around them, dropped.

Lowering keeps a statement's conditions as guards where isl's loops already stop short of the
points that fail them, and a stage written for any size keeps selects that a known size makes
constant: attention's probabilities, zero outside the keys, are never outside at a length that
the block of keys divides (``j.step >= 1 and 64 * j.step + e - 64 < 256`` over ``j.step`` in
1..4 and ``e`` in 0..63). On a GPU each is a compare and a select per element of a register
tile, in the loop that should be the tensor cores' alone. This pass evaluates each affine
condition over the constant ranges of the loops around it (a lane's ``x % k`` ranging over
0..k-1) and replaces a guard or a select whose condition holds at all of them by what it keeps;
anything it cannot decide stays.
"""

from __future__ import annotations

from ...ir.expr import Binary, Const, Expr, Select, Var
from ..core.nodes import For, If, Let, Stmt
from ..core.visit import rebuild_stmt, transform_expr
from .full_tiles import affine_atoms

Span = tuple[int, int] | None  # a variable's inclusive range, None where it is not constant


def drop_true_guards(stmt: Stmt) -> Stmt:
    """`stmt` with the guards and selects that always hold replaced by what they keep (module
    doc). Guarantees the same effect at every point the loops reach."""
    return _walk(stmt, {})


def _walk(s: Stmt, ranges: dict[Var, Span]) -> Stmt:
    if isinstance(s, For):
        inner = {**ranges, s.var: _span(s)}
        return rebuild_stmt(s, lambda e: _fold(e, ranges), lambda k: _walk(k, inner))
    if isinstance(s, Let):
        inner = {**ranges, s.var: None}
        return rebuild_stmt(s, lambda e: _fold(e, ranges), lambda k: _walk(k, inner))
    if isinstance(s, If) and _always(s.cond, ranges):
        return _walk(s.then, ranges)
    return rebuild_stmt(s, lambda e: _fold(e, ranges), lambda k: _walk(k, ranges))


def _span(loop: For) -> Span:
    if isinstance(loop.min, Const) and isinstance(loop.extent, Const):
        low, count = int(loop.min.value), int(loop.extent.value)
        return (low, low + count - 1) if count > 0 else None
    return None


def _fold(e: Expr, ranges: dict[Var, Span]) -> Expr:
    def select(x: Expr) -> Expr | None:
        if isinstance(x, Select) and _always(x.cond, ranges):
            return x.true_value
        return None

    return transform_expr(e, select)


def _always(cond: Expr, ranges: dict[Var, Span]) -> bool:
    """Whether `cond` (comparisons of affine forms, joined by "and") holds at every point of
    `ranges`."""
    forms = affine_atoms(cond, opaque=True)
    return forms is not None and all(_lowest(form, ranges) >= 0 for form in forms)


def _lowest(form: dict, ranges: dict[Var, Span]) -> float:
    """The least value of the affine `form` over `ranges` (minus infinity where a term's range
    is unknown)."""
    total = 0
    for term, k in form.items():
        if term is None:
            total += k
            continue
        span = _range(term, ranges)
        if span is None:
            return float("-inf")
        total += min(k * span[0], k * span[1])
    return total


def _range(term: Expr, ranges: dict[Var, Span]) -> Span:
    if isinstance(term, Var):
        return ranges.get(term)
    if (
        isinstance(term, Binary)
        and term.op == "%"
        and isinstance(term.b, Const)
        and int(term.b.value) > 0
    ):
        return (0, int(term.b.value) - 1)  # a floored remainder
    return None
