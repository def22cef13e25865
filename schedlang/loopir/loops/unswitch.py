"""Warpgroup products out of branches: loops versioned on the guards that do not change in them.

isl guards each statement with the condition that its point exists. Where the edge of a matrix
leaves a warpgroup no rows of a block's tile (at 4000^3 the last block row of 128 has 32 rows:
the second warpgroup of 64 has none), its products stand under ``if warpgroup < ...`` inside
the k loop. When a block's tile is given by the block indices, isl separates the blocks at the
edge from the others and the guard stays out of the interior blocks' code; when a block walks
over tiles in a loop (persistent blocks), every tile's k loop holds the guard, and ptxas,
unable to prove the branch uniform, waits for each product before issuing the next.

The guard's condition does not change in the k loop, so the loop is versioned on it::

    for k: ...; if c: products; ...   ->   if c: for k: ...; products; ...
                                            else: for k: ...; ...

the same computation, with no branch between the products (code generation then waits for
them before any branch and before paths merge, `codegen.nvptx.wgmma.WgmmaOrder`). This runs
on the kernel's body only, after each role of a bulk-copy pipeline has its own loop
(`bulk_pipeline.split_roles`), which is where the warpgroup's index stops changing in the k
loop; the interpreter runs the loop as it was.
"""

from __future__ import annotations

from ...ir.expr import Expr, Var
from ...ir.printer import expr_str
from ..core.nodes import For, If, Let, Load, Seq, Stmt, seq
from ..core.visit import stmt_children, walk_expr, walk_stmt, with_children
from ..memory.fragments import is_wgmma


def unswitch_products(stmt: Stmt) -> Stmt:
    """`stmt` with each serial loop versioned on the conditions of the guards around its
    warpgroup products that do not change in the loop, outermost loops first."""
    if not any(is_wgmma(s) for s in walk_stmt(stmt)):
        return stmt  # most kernels: nothing to look for
    return _unswitched(stmt)


def _unswitched(stmt: Stmt) -> Stmt:
    if isinstance(stmt, For) and stmt.kind == "serial":
        cond = _invariant_guard(stmt)
        if cond is not None:
            key = expr_str(cond)
            holds, fails = _decided(stmt, key, True), _decided(stmt, key, False)
            return If(cond, _unswitched(holds), _unswitched(fails or seq()))
    kids = stmt_children(stmt)
    if not kids:
        return stmt
    return with_children(stmt, tuple(_unswitched(k) for k in kids))


def _invariant_guard(loop: For) -> Expr | None:
    """The condition of the first guard in `loop` that holds warpgroup products and reads
    neither memory nor a variable set in the loop."""
    inside: set[Var] = {loop.var}
    for s in walk_stmt(loop.body):  # parents first: a guard's loops are in `inside` by then
        if isinstance(s, (For, Let)):
            inside.add(s.var)
        elif isinstance(s, If) and s.otherwise is None and any(map(is_wgmma, walk_stmt(s.then))):
            reads = list(walk_expr(s.cond))
            if not any(isinstance(e, Load) or (isinstance(e, Var) and e in inside) for e in reads):
                return s.cond
    return None


def _decided(s: Stmt, key: str, holds: bool) -> Stmt | None:
    """`s` with the guards whose condition prints as `key` decided: replaced by their body
    where it `holds`, dropped where not (None where nothing is left)."""
    if isinstance(s, If) and s.otherwise is None and expr_str(s.cond) == key:
        return _decided(s.then, key, holds) if holds else None
    kids = stmt_children(s)
    if not kids:
        return s
    decided = [_decided(k, key, holds) for k in kids]
    if isinstance(s, Seq):
        return seq(*decided) if any(d is not None for d in decided) else None
    if isinstance(s, For | If) and all(d is None for d in decided):
        return None  # a loop over nothing, or a branch to nothing
    return with_children(s, tuple(seq() if d is None else d for d in decided))
