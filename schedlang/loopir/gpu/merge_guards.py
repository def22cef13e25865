"""Neighbouring statements under one guard share it: after unrolling, each copy of a statement
stands in its own loop over the block's threads and under its own copy of the guards isl put
around it (``if row >= key``, a mask's condition). Per copy, the branch hides from LLVM that the
copies compute the same values (a masked score's ``exp`` once per element of the row it
weights): merged, the copies sit in one block, where common subexpressions are found.

Two neighbouring loops over one thread index with one extent are one loop (each thread runs
the first body, then the second, either way; a barrier between them is a statement between
them, and nothing is merged across it); loops over blocks are not (each may be a kernel of its
own, which the next one waits for), and two neighbouring ``if`` with the same condition
one ``if``, when the condition reads no memory (the first body cannot change it).
"""

from __future__ import annotations

from ...ir.expr import Expr
from ...ir.printer import expr_str
from ..core.nodes import For, If, Load, Seq, Stmt, seq
from ..core.visit import stmt_children, substitute_stmt, walk_expr, with_children


def merge_guards(stmt: Stmt) -> Stmt:
    kids = tuple(merge_guards(kid) for kid in stmt_children(stmt))
    stmt = with_children(stmt, kids) if kids else stmt
    if not isinstance(stmt, Seq):
        return stmt
    merged: list[Stmt] = []
    for s in stmt.stmts:
        joined = _join(merged[-1], s) if merged else None
        if joined is None:
            merged.append(s)
        else:
            merged[-1] = joined
    return seq(*merged) if len(merged) != len(stmt.stmts) else stmt


def _join(first: Stmt, second: Stmt) -> Stmt | None:
    """One statement for two merged ones, or None. Both are merged inside already."""
    if isinstance(first, For) and isinstance(second, For) and _same_threads(first, second):
        body = _seam(first.body, substitute_stmt(second.body, {second.var: first.var}))
        return For(first.var, first.min, first.extent, first.kind, body, first.thread)
    if (
        isinstance(first, If)
        and isinstance(second, If)
        and first.otherwise is None
        and second.otherwise is None
        and _pure(first.cond)
        and expr_str(first.cond) == expr_str(second.cond)
    ):
        return If(first.cond, _seam(first.then, second.then))
    return None


def _seam(a: Stmt, b: Stmt) -> Stmt:
    """`a` then `b`, each merged inside already: only the last of one and the first of the
    other may merge."""
    left = list(a.stmts) if isinstance(a, Seq) else [a]
    right = list(b.stmts) if isinstance(b, Seq) else [b]
    joined = _join(left[-1], right[0])
    if joined is None:
        return seq(*left, *right)
    return seq(*left[:-1], joined, *right[1:])


def _same_threads(a: For, b: For) -> bool:
    return (
        a.thread is not None
        and a.thread.startswith("threadIdx")  # two block loops are two kernels' grids
        and a.thread == b.thread
        and expr_str(a.min) == expr_str(b.min)
        and expr_str(a.extent) == expr_str(b.extent)
    )


def _pure(cond: Expr) -> bool:
    return not any(isinstance(e, Load) for e in walk_expr(cond))
