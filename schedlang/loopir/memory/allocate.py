"""Place each intermediate buffer's allocation around exactly the code that uses it."""

from __future__ import annotations

from ..core.nodes import (
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
from ..core.visit import walk_expr, walk_stmt


def _named(stmt: Stmt) -> tuple[tuple, tuple]:
    """The buffers `stmt` itself names, and its own expressions (whose loads name more)."""
    if isinstance(stmt, Store):
        return (stmt.buffer,), (*stmt.indices, stmt.value)
    if isinstance(stmt, If):
        return (), (stmt.cond,)
    if isinstance(stmt, Let):
        return (), (stmt.value,)
    if isinstance(stmt, MatrixOp):
        tiles = (stmt.dst, *stmt.srcs)
        return tuple(t.buffer for t in tiles), tuple(i for t in tiles for i in t.base)
    if isinstance(stmt, (AsyncCopy, BulkStore)):
        return (stmt.dst, stmt.src), (*stmt.dst_index, *stmt.src_index)
    if isinstance(stmt, BulkCopy):
        indices = (*stmt.dst_index, *stmt.src_index, stmt.barrier_index)
        return (stmt.dst, stmt.src, stmt.barrier), indices
    if isinstance(stmt, MBarrier):
        return (stmt.barrier,), ()
    if isinstance(stmt, CallExtern):
        return (), stmt.args
    return (), ()


def _inner(stmt: Stmt) -> tuple[Stmt, ...]:
    if isinstance(stmt, (For, Let, Allocate)):
        return (stmt.body,)
    if isinstance(stmt, If):
        return (stmt.then,) if stmt.otherwise is None else (stmt.then, stmt.otherwise)
    if isinstance(stmt, Seq):
        return stmt.stmts
    return ()


def _groups_used(stmt: Stmt, owner: dict[int, int], used: dict[int, set[int]]) -> set[int]:
    """Fill `used` (id of each statement under `stmt` -> the groups it uses, by position),
    bottom-up, each expression walked once."""
    found: set[int] = set()
    for child in _inner(stmt):
        found |= _groups_used(child, owner, used)
    buffers, exprs = _named(stmt)
    loads = (n.buffer for e in exprs for n in walk_expr(e) if isinstance(n, Load))
    for buffer in (*buffers, *loads):
        k = owner.get(id(buffer))
        if k is not None:
            found.add(k)
    used[id(stmt)] = found
    return found


def _above_kernel(loop: For) -> bool:
    """A block loop, or a loop around block loops (each of its iterations launches a grid)."""
    return any(
        isinstance(s, For) and (s.thread or "").startswith("blockIdx") for s in walk_stmt(loop)
    )


def insert_allocations(
    stmt: Stmt, groups: list[tuple[Buffer, ...]], whole: frozenset[Buffer] = frozenset()
) -> Stmt:
    """Wrap the smallest subtree holding every use of each group of buffers in `Allocate`s
    (a group: the outputs of one multi-output stage, which are computed together). A group
    holding a buffer of `whole` is allocated around all of `stmt`: a stage at the root whose
    steps run inside a scan's step loop keeps every step, for later steps to read.

    Expects the buffers' producers and consumers to be siblings under the loop the producer is
    computed at (as placement guarantees); an allocation inside a loop is private to each
    iteration, which is what makes a producer computed inside a parallel loop race-free. A
    "shared" buffer belongs to a GPU block: it is allocated just inside the block loops, never
    inside a loop of the block's code, so one buffer is refilled across iterations (as on
    hardware), and never around a grid, which gets fresh shared memory.

    One walk finds which groups each statement uses and one more places them all (placing
    each group by its own walk cost time cubic in the stages of a chain).
    """
    outer = [g for g in groups if any(b in whole for b in g)]
    groups = [g for g in groups if not any(b in whole for b in g)]
    owner = {id(b): k for k, group in enumerate(groups) for b in group}
    used: dict[int, set[int]] = {}
    anywhere = _groups_used(stmt, owner, used)
    # a group no statement uses any more (a pass computed into another buffer) takes no memory
    stmt = _Placer(groups, used).place(stmt, [k for k in range(len(groups)) if k in anywhere])
    for group in reversed(outer):
        stmt = _allocated(group, stmt)
    return stmt


class _Placer:
    def __init__(self, groups: list[tuple[Buffer, ...]], used: dict[int, set[int]]) -> None:
        self.groups = groups
        self.used = used
        self.kernel: dict[int, bool] = {}  # id of a loop -> whether it is `_above_kernel`
        self.seq_users: dict[int, dict[int, list[int]]] = {}  # id of a Seq -> `_users`

    def place(self, stmt: Stmt, pending: list[int]) -> Stmt:
        """`stmt` with the groups `pending` (in order: the first outermost) allocated inside
        it or around it."""
        if not pending:
            return stmt
        here: list[int] = []
        down: dict[int, list[int]] = {}  # position of a child -> the groups placed in it
        for k in pending:
            spot = self._child_for(stmt, k)
            if spot is None:
                here.append(k)
            else:
                down.setdefault(spot, []).append(k)
        if down:
            stmt = self._rebuilt(stmt, down)
        for k in reversed(here):
            stmt = _allocated(self.groups[k], stmt)
        return stmt

    def _child_for(self, stmt: Stmt, k: int) -> int | None:
        """Which child of `stmt` group `k` goes into, or None where it is allocated around
        `stmt`."""
        if isinstance(stmt, For):
            shared = self.groups[k][0].scope == "shared"
            return None if shared and not self._above_kernel(stmt) else 0
        if isinstance(stmt, Seq):
            users = self._users(stmt).get(k, ())
            return users[0] if len(users) == 1 else None
        if isinstance(stmt, Allocate) and k in self.used[id(stmt.body)]:
            return 0
        return None

    def _rebuilt(self, stmt: Stmt, down: dict[int, list[int]]) -> Stmt:
        if isinstance(stmt, For):
            body = self.place(stmt.body, down[0])
            return For(stmt.var, stmt.min, stmt.extent, stmt.kind, body, stmt.thread)
        if isinstance(stmt, Allocate):
            return Allocate(stmt.buffer, self.place(stmt.body, down[0]))
        stmts = list(stmt.stmts)
        for j, pending in down.items():
            stmts[j] = self.place(stmts[j], pending)
        return Seq(tuple(stmts))

    def _users(self, seq: Seq) -> dict[int, list[int]]:
        """Group -> the positions of `seq`'s statements that use it."""
        if id(seq) not in self.seq_users:
            users: dict[int, list[int]] = {}
            for j, s in enumerate(seq.stmts):
                for k in self.used[id(s)]:
                    users.setdefault(k, []).append(j)
            self.seq_users[id(seq)] = users
        return self.seq_users[id(seq)]

    def _above_kernel(self, loop: For) -> bool:
        if id(loop) not in self.kernel:
            self.kernel[id(loop)] = _above_kernel(loop)
        return self.kernel[id(loop)]


def _allocated(group: tuple[Buffer, ...], body: Stmt) -> Stmt:
    for buffer in reversed(group):
        body = Allocate(buffer, body)
    return body
