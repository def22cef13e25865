"""Store predicates (`Stage.set_store_predicate`): each store of a stage runs under its
predicate, whose hardware indices are the variables of the loops bound to them around it.

A predicate is written before the loops exist (TE's ``tx.var``), so a hardware index in it is
a variable standing for "the index this thread has"; in the loop nest, that is the variable of
the innermost enclosing loop bound to the tag. A store with no such loop around it has no such
index, which the user hears of with the primitive's call.
"""

from __future__ import annotations

from ...ir.expr import Var
from ...ir.visit import walk
from ...schedule.errors import AnnotationError, message
from ..core.nodes import Buffer, For, If, Stmt, Store
from ..core.visit import stmt_children, substitute_expr, with_children


def predicate_stores(body: Stmt, predicates: dict[Buffer, object]) -> Stmt:
    """`body` with each store to a buffer of `predicates` (its `StorePredicate` record)
    guarded by the predicate."""
    if not predicates:
        return body
    return _guard(body, predicates, {})


def _guard(s: Stmt, predicates: dict, bound: dict[str, Var]) -> Stmt:
    if isinstance(s, For) and s.thread is not None:
        bound = {**bound, s.thread: s.var}
    if isinstance(s, Store) and s.buffer in predicates:
        record = predicates[s.buffer]
        mapping = {}
        for v in walk(record.predicate):
            if isinstance(v, Var) and v.kind == "thread":
                if v.name not in bound:
                    what = (
                        f"a store of '{s.buffer.name}' is not inside a loop bound to {v.name}; "
                        f"bind one of the stage's loops to it"
                    )
                    raise AnnotationError(
                        message(record.stage, "set_store_predicate(...)", record.loc, what)
                    )
                mapping[v] = bound[v.name]
        return If(substitute_expr(record.predicate, mapping), s)
    kids = stmt_children(s)
    new = tuple(_guard(k, predicates, bound) for k in kids)
    if all(a is b for a, b in zip(kids, new)):
        return s
    return with_children(s, new)
