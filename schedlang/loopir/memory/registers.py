"""Keep "local" buffers in registers on a GPU: unroll the small loops that index them.

A GPU thread's registers cannot be indexed by a variable, so a local array indexed by a loop
variable lives in slow local memory (a stack in DRAM). Unrolling the loops whose variables index
local buffers makes every index a constant, and ptxas then keeps the array in registers. TE's
recipes unroll those loops by hand; here the CUDA target does it for every schedule.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from ...ir.expr import Binary, Compare, Const, Expr, Var, const
from ..core.nodes import FRAGMENT_SCOPES, Allocate, For, If, Let, Load, MatrixOp, Stmt, Store
from ..core.simplify import simplify_expr
from ..core.visit import stmt_children, stmt_exprs, walk_expr, walk_stmt, with_children

MAX_COPIES = 256  # the most copies of a body that register promotion makes (nested loops multiply)
_UNROLLABLE = ("serial", "vthread")  # a virtual thread is a serial loop over its registers


def mark_register_loops(stmt: Stmt) -> Stmt:
    """`stmt` with serial and virtual-thread loops of constant extent whose variable indexes a
    "local" buffer (or a fragment) marked ``unrolled``, innermost first, as long as the copies
    of one body stay within `MAX_COPIES`. `unroll_loops` then unrolls them. A loop whose extent
    is only bounded by a constant (``min(3, n - 8 * i) + 1``: the register tiles of a block cut
    by the edge of the domain) runs that constant count, the iterations past its extent
    guarded (only where it picks fragment tiles: a local tile keeps such a loop, whose
    unrolled guards would pile up)."""
    return _visit(stmt)[0]


def _visit(s: Stmt) -> tuple[Stmt, int]:
    """(new statement, how many copies of its innermost bodies its unrolled loops make)."""
    kids = stmt_children(s)
    results = [_visit(k) for k in kids]
    new = tuple(r[0] for r in results)
    copies = max((r[1] for r in results), default=1)
    if any(a is not b for a, b in zip(new, kids)):
        s = with_children(s, new)
    if not (isinstance(s, For) and s.kind in _UNROLLABLE):
        return s, copies
    extent = _largest(s.extent)
    if extent is None or copies * extent > MAX_COPIES or not _indexes_local(s.body, s.var):
        return s, copies
    if not isinstance(s.extent, Const):  # a partial tile: the full count, the tail guarded
        if not _indexes_fragment(s.body, s.var):
            return s, copies  # a local tile keeps its loop (the guards would pile up)
        end = Binary("+", s.min, s.extent, s.var.dtype)
        s = replace(s, extent=const(extent, s.var.dtype), body=If(Compare("<", s.var, end), s.body))
    return replace(s, kind="unrolled"), copies * extent


def _largest(extent: Expr) -> int | None:
    """A constant that `extent` never exceeds, where its form shows one: a constant, or isl's
    ``min(c, e) + k`` of a loop over the tiles of a box cut at the edge of the domain."""
    if isinstance(extent, Const):
        return int(extent.value)
    if isinstance(extent, Binary) and extent.op == "min":
        bounds = [b for b in (_largest(extent.a), _largest(extent.b)) if b is not None]
        return min(bounds) if bounds else None
    if isinstance(extent, Binary) and extent.op == "+":
        a, b = _largest(extent.a), _largest(extent.b)
        return a + b if a is not None and b is not None else None
    return None


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


def _indexes_fragment(body: Stmt, var: Var) -> bool:
    """Whether `var` picks a tensor-core fragment's tile: a fragment has no element a thread
    could index at run time, so its tiles must be known when the code is generated."""
    return any(
        _uses(t.base, {var})
        for s in walk_stmt(body)
        if isinstance(s, MatrixOp)
        for t in (s.dst, *s.srcs)
        if t.buffer.scope in FRAGMENT_SCOPES
    )


def _local_indices(s: Stmt) -> Iterator[tuple[Expr, ...]]:
    """The indices of the "local" buffer accesses `s` holds itself (not its sub-statements),
    tensor-core fragments' tile bases included (fragments are registers too)."""
    if isinstance(s, Store) and s.buffer.scope == "local":
        yield s.indices
    if isinstance(s, MatrixOp):
        for tile in (s.dst, *s.srcs):
            if tile.buffer.scope in FRAGMENT_SCOPES:
                yield tile.base
    for e in stmt_exprs(s):
        for node in walk_expr(e):
            if isinstance(node, Load) and node.buffer.scope == "local":
                yield node.indices


def _uses(indices, wanted: set[Var]) -> bool:
    return any(node in wanted for i in indices for node in walk_expr(i) if type(node) is Var)
