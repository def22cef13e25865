"""Vectorized loops go inside the thread loops around a statement.

Lowering puts thread loops innermost (every thread runs each statement in lockstep), so a
vectorized loop of a stage whose other loops are bound to threads ends up *outside* them:
``for v (vectorized): for tx (threadIdx.x): S``. On a GPU a thread loop is not a loop but the
thread's index, so the two commute; with the vectorized loop innermost, each thread's ``S``
over ``v`` becomes one vector load and store.
"""

from __future__ import annotations

from dataclasses import replace

from ...ir.expr import Var
from ..core.nodes import For, If, Stmt
from ..core.visit import transform_stmt, walk_expr


def sink_vector_loops(stmt: Stmt) -> Stmt:
    """`stmt` with every vectorized loop moved inside the thread loops (and the guards that do
    not use its variable) directly below it. Same effect: thread loops with constant extents
    commute with any loop, and a guard independent of a loop's variable commutes with it."""
    return transform_stmt(stmt, _sink)


def _sink(loop: Stmt) -> Stmt | None:
    if not (isinstance(loop, For) and loop.kind == "vectorized"):
        return None
    body = loop.body
    bounds = (body.min, body.extent) if isinstance(body, For) else ()
    if (
        isinstance(body, For)
        and body.kind == "bound"
        and not any(_mentions(e, loop.var) for e in bounds)
    ):
        return replace(body, body=_sink(replace(loop, body=body.body)))
    if isinstance(body, If) and body.otherwise is None and not _mentions(body.cond, loop.var):
        return If(body.cond, _sink(replace(loop, body=body.then)))
    return loop


def _mentions(e, var: Var) -> bool:
    return any(node is var for node in walk_expr(e))
