"""Keep "local" buffers in registers on a GPU: unroll the small loops that index them.

A GPU thread's registers cannot be indexed by a variable, so a local array indexed by a loop
variable lives in slow local memory (a stack in DRAM). Unrolling the loops whose variables index
local buffers makes every index a constant, and ptxas then keeps the array in registers. TE's
recipes unroll those loops by hand; here the CUDA target does it for every schedule.
"""

from __future__ import annotations

from dataclasses import replace

from ..ir.expr import Const, Var
from .nodes import For, Load, Stmt, Store
from .visit import stmt_children, stmt_exprs, walk_expr, walk_stmt, with_children

MAX_COPIES = 256  # the most copies of a body that register promotion makes (nested loops multiply)
_UNROLLABLE = ("serial", "vthread")  # a virtual thread is a serial loop over its registers


def mark_register_loops(stmt: Stmt) -> Stmt:
    """`stmt` with serial and virtual-thread loops of constant extent whose variable indexes a
    "local" buffer marked ``unrolled``, innermost first, as long as the copies of one body stay
    within `MAX_COPIES`. `unroll_loops` then unrolls them."""
    return _visit(stmt)[0]


def _visit(s: Stmt) -> tuple[Stmt, int]:
    """(new statement, how many copies of its innermost bodies its unrolled loops make)."""
    kids = stmt_children(s)
    results = [_visit(k) for k in kids]
    new = tuple(r[0] for r in results)
    copies = max((r[1] for r in results), default=1)
    if any(a is not b for a, b in zip(new, kids)):
        s = with_children(s, new)
    if not (isinstance(s, For) and s.kind in _UNROLLABLE and isinstance(s.extent, Const)):
        return s, copies
    extent = int(s.extent.value)
    if copies * extent <= MAX_COPIES and _indexes_local(s.body, s.var):
        return replace(s, kind="unrolled"), copies * extent
    return s, copies


def _indexes_local(body: Stmt, var: Var) -> bool:
    for s in walk_stmt(body):
        if isinstance(s, Store) and s.buffer.scope == "local" and _uses(s.indices, var):
            return True
        for e in stmt_exprs(s):
            for node in walk_expr(e):
                if isinstance(node, Load) and node.buffer.scope == "local":
                    if _uses(node.indices, var):
                        return True
    return False


def _uses(indices, var: Var) -> bool:
    return any(node is var for i in indices for node in walk_expr(i))
