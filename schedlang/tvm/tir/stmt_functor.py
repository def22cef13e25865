"""``tvm.tir.stmt_functor``: walking a lowered loop nest (``tvm.lower(...)["main"].body``).

The nodes visited are schedlang's loop IR: statements (`For`, `If`, `Store`, `Allocate`, ...)
and the expressions inside them (loads' indices included), not TVM's TIR classes."""

from __future__ import annotations

from collections.abc import Callable

from ...ir.expr import Expr, as_expr
from ...ir.visit import substitute as _substitute
from ...loopir.core.nodes import Stmt
from ...loopir.core.visit import expr_children, stmt_children, stmt_exprs


def post_order_visit(node: Stmt | Expr, fvisit: Callable[[object], None]) -> None:
    """Call `fvisit` on every node of `node`, children before their parent (a statement's
    expressions before its sub-statements), each node object once."""
    seen: set[int] = set()
    stack: list[tuple[object, bool]] = [(node, False)]
    while stack:
        item, expanded = stack.pop()
        if expanded:
            fvisit(item)
            continue
        if id(item) in seen:
            continue
        seen.add(id(item))
        stack.append((item, True))
        kids = _children(item)
        stack.extend((kid, False) for kid in reversed(kids))


def _children(node: object) -> tuple:
    if isinstance(node, Stmt):
        return (*stmt_exprs(node), *stmt_children(node))
    if isinstance(node, Expr):
        return expr_children(node)
    raise TypeError(f"post_order_visit: {node!r} is not a statement or expression")


def substitute(node: Expr, vmap: dict) -> Expr:
    """`node` with each variable of `vmap` replaced by its value (TE's ``substitute``, for
    expressions)."""
    return _substitute(as_expr(node), {var: as_expr(value) for var, value in vmap.items()})
