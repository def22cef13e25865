"""Keep "local" buffers in registers on a GPU: unroll the small loops that index them.

A GPU thread's registers cannot be indexed by a variable, so a local array indexed by a loop
variable lives in slow local memory (a stack in DRAM). Unrolling the loops whose variables index
local buffers makes every index a constant, and ptxas then keeps the array in registers. TE's
recipes unroll those loops by hand; here the CUDA target does it for every schedule.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from ..ir.expr import Const, Expr, Var
from .nodes import Allocate, For, If, Let, Load, Stmt, Store
from .simplify import simplify_expr
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


def left_to_llvm(loop: For) -> bool:
    """Whether an ``unrolled`` loop can reach the code generator as a loop, for LLVM to unroll
    (`for_range`'s hint): its extent is a constant and nothing in its body needs its variable
    as one: no index of a "local" buffer, bound of an inner loop, size of an allocation, nor a
    guard (a partial tile's, which folds away in most copies and `full_tiles` may then drop).
    Unrolled in the loop IR instead, it would give LLVM the same code once every later pass and
    the IR generator had walked each copy (the k loop of a GEMM's register tile: 8 copies of 64
    multiply-adds)."""
    if not isinstance(loop.extent, Const):
        return False
    needed = {loop.var}  # the variable and those a Let computes from it

    def uses(exprs) -> bool:  # simplified: lowering leaves terms that cancel (k - k)
        return _uses(tuple(simplify_expr(e) for e in exprs), needed)

    for s in walk_stmt(loop.body):
        if isinstance(s, Let) and uses((s.value,)):
            needed.add(s.var)
        elif isinstance(s, For) and uses((s.min, s.extent)):
            return False
        elif isinstance(s, If) and uses((s.cond,)):
            return False
        elif isinstance(s, Allocate) and uses(s.buffer.shape):
            return False
        if any(uses(indices) for indices in _local_indices(s)):
            return False
    return True


def _indexes_local(body: Stmt, var: Var) -> bool:
    return any(_uses(ix, {var}) for s in walk_stmt(body) for ix in _local_indices(s))


def _local_indices(s: Stmt) -> Iterator[tuple[Expr, ...]]:
    """The indices of the "local" buffer accesses `s` holds itself (not its sub-statements)."""
    if isinstance(s, Store) and s.buffer.scope == "local":
        yield s.indices
    for e in stmt_exprs(s):
        for node in walk_expr(e):
            if isinstance(node, Load) and node.buffer.scope == "local":
                yield node.indices


def _uses(indices, wanted: set[Var]) -> bool:
    return any(node in wanted for i in indices for node in walk_expr(i) if type(node) is Var)
