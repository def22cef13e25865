"""A loop of warpgroup products split where the guards inside it start to fail.

Under a causal mask, attention's loop over blocks of keys holds a guard per element of each
thread's score tile (the key at or below the row), and a guard that skips a warpgroup's
scores above the diagonal. They hold at every block below the diagonal and fail only in the
last one or two: each is a compare per element, and a guard around a product makes ptxas wait
for it before the next. FlashAttention runs the masked blocks in a loop of their own.

This pass does so for any serial loop holding warpgroup products: it finds (isl, in
`poly.first_failing`) the first step at which a guard or select that varies with the threads
or the loops inside may fail for some thread, and splits the loop there. The steps before run
a copy of the body with those conditions decided, the rest the body as it was. The split point
depends on no thread's index, so every thread of a block runs both loops alike and meets their
barriers.
"""

from __future__ import annotations

from ...ir.expr import Binary, Expr, Select, Var
from ...poly.first_failing import Span, first_failing
from ..core.nodes import For, If, Let, Stmt, seq
from ..core.visit import (
    rebuild_stmt,
    stmt_children,
    stmt_exprs,
    transform_expr,
    walk_expr,
    walk_stmt,
)
from ..from_isl import param_expr
from ..memory.fragments import is_wgmma

_THREADS = ("threadIdx", "vthread")


def split_full_steps(stmt: Stmt) -> Stmt:
    """`stmt` with each serial loop of warpgroup products split before the first step where
    a guard varying inside it may fail (module doc)."""
    if not any(is_wgmma(s) for s in walk_stmt(stmt)):
        return stmt  # most kernels: nothing to look for
    return _walk(stmt, {}, {})


def _span(loop: For) -> Span:
    return Span(loop.var, loop.min, loop.extent)


def _walk(s: Stmt, threads: dict[Var, Span], outer: dict[Var, Span]) -> Stmt:
    if isinstance(s, For) and s.kind == "serial" and any(map(is_wgmma, walk_stmt(s.body))):
        split = _split(s, threads, outer)
        if split is not None:
            return split
    if isinstance(s, For) and s.thread is not None and s.thread.startswith(_THREADS):
        threads = {**threads, s.var: _span(s)}
    elif isinstance(s, For):
        outer = {**outer, s.var: _span(s)}
    return rebuild_stmt(s, lambda e: e, lambda k: _walk(k, threads, outer))


def _split(loop: For, threads: dict[Var, Span], outer: dict[Var, Span]) -> Stmt | None:
    conds = _conditions(loop, threads)
    found = first_failing(_span(loop), conds, outer) if conds else None
    if found is None:
        return None
    dtype = loop.var.dtype
    split = param_expr(found.first, found.context, found.params, dtype)
    decided = {id(conds[k][0]) for k in found.decided}
    upper = Binary("+", loop.min, loop.extent, dtype)
    below = Binary("-", split, loop.min, dtype)
    full = For(loop.var, loop.min, below, loop.kind, _decide(loop.body, decided), loop.thread)
    rest = For(loop.var, split, Binary("-", upper, split, dtype), loop.kind, loop.body, None)
    return seq(full, rest)


def _conditions(loop: For, threads: dict[Var, Span]) -> list[tuple[Expr, list[Span]]]:
    """The guards' and selects' conditions in `loop` that read its variable and a thread's
    or an inner loop's, each with the loops around it (the threads', and those inside)."""
    found: list[tuple[Expr, list[Span]]] = []

    def note(cond: Expr, around: list[Span]) -> None:
        free = {x for x in walk_expr(cond) if isinstance(x, Var)}
        varying = {s.var for s in around} | set(threads)
        if loop.var in free and free & varying:
            found.append((cond, [*threads.values(), *around]))

    def visit(s: Stmt, around: list[Span]) -> None:
        for e in stmt_exprs(s):
            for x in walk_expr(e):
                if isinstance(x, Select):
                    note(x.cond, around)
        if isinstance(s, If):
            note(s.cond, around)
        if isinstance(s, Let):
            return  # a value the conditions below may read: left alone
        inner = [*around, _span(s)] if isinstance(s, For) else around
        for k in stmt_children(s):
            visit(k, inner)

    visit(loop.body, [])
    return found


def _decide(body: Stmt, decided: set[int]) -> Stmt:
    """`body` with the guards and selects of the conditions `decided` taken as true."""

    def fold(e: Expr) -> Expr | None:
        if isinstance(e, Select) and id(e.cond) in decided:
            return transform_expr(e.true_value, fold)
        return None

    def go(s: Stmt) -> Stmt:
        if isinstance(s, If) and id(s.cond) in decided:
            return go(s.then)
        return rebuild_stmt(s, lambda e: transform_expr(e, fold), go)

    return go(body)


__all__ = ["split_full_steps"]
