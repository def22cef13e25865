"""Place each intermediate buffer's allocation around exactly the code that uses it."""

from __future__ import annotations

from ..ir.visit import walk
from .nodes import (
    Allocate,
    AsyncCopy,
    Buffer,
    BulkCopy,
    BulkStore,
    CallExtern,
    For,
    If,
    Let,
    Load,
    MatrixOp,
    MBarrier,
    Seq,
    Stmt,
    Store,
)
from .visit import walk_stmt


def _uses(stmt: Stmt, buffer: Buffer) -> bool:
    if isinstance(stmt, Store):
        if stmt.buffer is buffer:
            return True
        exprs = (*stmt.indices, stmt.value)
    elif isinstance(stmt, For):
        return _uses(stmt.body, buffer)
    elif isinstance(stmt, If):
        return (
            _expr_uses(stmt.cond, buffer)
            or _uses(stmt.then, buffer)
            or (stmt.otherwise is not None and _uses(stmt.otherwise, buffer))
        )
    elif isinstance(stmt, Let):
        return _expr_uses(stmt.value, buffer) or _uses(stmt.body, buffer)
    elif isinstance(stmt, Allocate):
        return _uses(stmt.body, buffer)
    elif isinstance(stmt, Seq):
        return any(_uses(s, buffer) for s in stmt.stmts)
    elif isinstance(stmt, MatrixOp):
        tiles = (stmt.dst, *stmt.srcs)
        if any(t.buffer is buffer for t in tiles):
            return True
        exprs = tuple(i for t in tiles for i in t.base)
    elif isinstance(stmt, AsyncCopy):
        if buffer is stmt.dst or buffer is stmt.src:
            return True
        exprs = (*stmt.dst_index, *stmt.src_index)
    elif isinstance(stmt, BulkCopy):
        if buffer in (stmt.dst, stmt.src, stmt.barrier):
            return True
        exprs = (*stmt.dst_index, *stmt.src_index, stmt.barrier_index)
    elif isinstance(stmt, BulkStore):
        if buffer is stmt.dst or buffer is stmt.src:
            return True
        exprs = (*stmt.dst_index, *stmt.src_index)
    elif isinstance(stmt, MBarrier):
        return buffer is stmt.barrier
    elif isinstance(stmt, CallExtern):
        exprs = stmt.args
    else:
        return False
    return any(_expr_uses(e, buffer) for e in exprs)


def _expr_uses(e, buffer: Buffer) -> bool:
    return any(isinstance(n, Load) and n.buffer is buffer for n in walk(e))


def _above_kernel(loop: For) -> bool:
    """A block loop, or a loop around block loops (each of its iterations launches a grid)."""
    return any(
        isinstance(s, For) and (s.thread or "").startswith("blockIdx") for s in walk_stmt(loop)
    )


def insert_allocations(stmt: Stmt, groups: list[tuple[Buffer, ...]]) -> Stmt:
    """Wrap the smallest subtree holding every use of each group of buffers in `Allocate`s
    (a group: the outputs of one multi-output stage, which are computed together).

    Expects the buffers' producers and consumers to be siblings under the loop the producer is
    computed at (as placement guarantees); an allocation inside a loop is private to each
    iteration, which is what makes a producer computed inside a parallel loop race-free. A
    "shared" buffer belongs to a GPU block: it is allocated just inside the block loops, never
    inside a loop of the block's code, so one buffer is refilled across iterations (as on
    hardware), and never around a grid, which gets fresh shared memory.
    """
    for group in groups:
        stmt = _place(stmt, group)
    return stmt


def _place(stmt: Stmt, group: tuple[Buffer, ...]) -> Stmt:
    if group[0].scope == "shared" and isinstance(stmt, For) and not _above_kernel(stmt):
        return _allocated(group, stmt)
    if isinstance(stmt, For):
        return For(
            stmt.var, stmt.min, stmt.extent, stmt.kind, _place(stmt.body, group), stmt.thread
        )
    if isinstance(stmt, Seq):
        users = [k for k, s in enumerate(stmt.stmts) if any(_uses(s, b) for b in group)]
        if len(users) == 1:
            k = users[0]
            inner = _place(stmt.stmts[k], group)
            return Seq(stmt.stmts[:k] + (inner,) + stmt.stmts[k + 1 :])
    if isinstance(stmt, Allocate) and any(_uses(stmt.body, b) for b in group):
        return Allocate(stmt.buffer, _place(stmt.body, group))
    return _allocated(group, stmt)


def _allocated(group: tuple[Buffer, ...], body: Stmt) -> Stmt:
    for buffer in reversed(group):
        body = Allocate(buffer, body)
    return body
