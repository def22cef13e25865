"""A producer warpgroup's registers handed to its consumers (Hopper's ``setmaxnreg``).

A pipeline of bulk copies with a producer (`memory.bulk_pipeline`) adds a warpgroup to the
block whose work is one thread issuing copies. A block of three warpgroups leaves each thread
168 registers, too few for two warpgroups holding attention's running output, scores and
probabilities in registers (FlashAttention 3's shape at head dim 128: about 200 a thread). On
sm_90a a warpgroup can give registers up and another take them, while the block runs: the
producer keeps 24, each consumer thread gets 240 (128 x 24 + 256 x 240 = 64,512 of the
multiprocessor's 65,536).

ptxas gives code the registers of the ``setmaxnreg`` that dominates it; code that both roles
reach after their branches meet again is compiled for the count at the kernel's entry, which a
warp that gave registers up no longer has. So the roles part for good after the kernel's last
block barrier before the producer's loop (where the producer has set its memory barriers up):
the rest of the kernel becomes ``if threadIdx.z == producer: (give up; the rest as the producer
runs it) else: (take; the rest as the consumers run it)``. Each side is a projection of the
same statements: the producer's keeps its own statements (loops bound to ``threadIdx.z`` that
pick its warpgroup) and the control flow around them, the consumers' everything else, their
loops over the consumer warpgroups becoming the branch's index and their barriers a named
barrier of their own threads. The roles meet only at memory barriers, so their statements need
not keep their order across roles, and a loop or a test around both (a causal mask's steps, a
scan's first step peeled before its loop) is run by each role, which can both evaluate it (it
depends on indices and sizes only). Consumers' statements before that barrier that only set
their own registers (an accumulator's zeros) move past it too: live from the entry, they were
held at its count. A statement every thread runs after the barrier (a block collective), or a
loop of steps around the barrier, leaves the kernel as it was.
"""

from __future__ import annotations

from dataclasses import replace

from ...ir.expr import Compare, Const, Expr, Var, const
from ..core.nodes import (
    REGISTER_SCOPES,
    Allocate,
    AsyncCopy,
    Barrier,
    Buffer,
    BulkCopy,
    For,
    If,
    Let,
    MatrixOp,
    MBarrier,
    Seq,
    SetRegisters,
    Stmt,
    Store,
)
from ..core.visit import substitute_stmt, walk_stmt
from ..memory.bulk_pipeline import PRODUCER
from ..memory.fragments import WARPGROUP
from ..memory.refill import reads, writes

REGISTER_FILE = 65536  # 32-bit registers a multiprocessor, every GPU since compute capability 5
PRODUCER_REGISTERS = 24  # the least setmaxnreg gives
MOST_REGISTERS = 240  # FlashAttention 3's and CUTLASS's consumers (a multiple of 8, < 256)


class _Mixed(Exception):
    """A statement after the parting that both roles run (or that neither's projection can
    take)."""


def consumer_registers(block: tuple[int, int, int]) -> int:
    """What each consumer thread gets of a block of warpgroups along ``threadIdx.z``, the last
    one the producer's, or 0 where the entry's share is already as much."""
    x, y, z = block
    if x * y != WARPGROUP or z < 3:
        return 0
    left = REGISTER_FILE - WARPGROUP * PRODUCER_REGISTERS
    return min(MOST_REGISTERS, left // (WARPGROUP * (z - 1)) // 8 * 8)


def hand_over_registers(body: Stmt, block: tuple[int, int, int]) -> tuple[Stmt, int]:
    """`body` (a kernel's, its roles split: `bulk_pipeline.split_roles`) with its roles parted
    after its last block barrier and the registers handed over, and the consumers' count; or
    `body` and 0 where it does not have that shape (module doc)."""
    count = consumer_registers(block)
    if not count or not any(is_producer(s) for s in walk_stmt(body)):
        return body, 0
    role = _Roles(Var("threadIdx.z.role", "int32", "axis"), block[2])
    try:
        return _parted(_sunk(body, role.consumers), role, count), count
    except _Mixed:
        return body, 0


def _holds_barrier(s: Stmt) -> bool:
    """`s` holds a block barrier on its spine (not inside a loop or a test)."""
    if isinstance(s, Barrier):
        return not (s.warpgroup or s.among)
    if isinstance(s, (Allocate, Let)):
        return _holds_barrier(s.body)
    if isinstance(s, Seq):
        return any(_holds_barrier(x) for x in s.stmts)
    return isinstance(s, For) and _is_grid(s) and _holds_barrier(s.body)


def _parting(s: Seq) -> int | None:
    """The child of `s` that holds the kernel's parting point: the last that holds a block
    barrier, up to the one that holds the producer's loop of copies (a barrier after that
    loop, as before an epilogue's shared store, is then the consumers' own)."""
    loops = [k for k, x in enumerate(s.stmts) if any(_producer_loop(n) for n in walk_stmt(x))]
    end = loops[0] if loops else len(s.stmts) - 1
    held = [k for k in range(end + 1) if _holds_barrier(s.stmts[k])]
    return held[-1] if held else None


def _producer_loop(s: Stmt) -> bool:
    """`s` is the producer's statement holding its loop of copies."""
    return is_producer(s) and any(isinstance(n, For) and n.kind == "serial" for n in walk_stmt(s))


def _is_grid(s: For) -> bool:
    return s.kind == "bound" and (s.thread or "").startswith("blockIdx")


def _sunk(s: Stmt, consumers: int) -> Stmt:
    """`s` with the statements that follow its last barrier's holder at every level moved into
    the sequence that holds the barrier, inside the allocations and lets around it (their
    buffers then live a little longer), and the consumers' statements before it that only set
    their own registers moved after the barrier."""
    if isinstance(s, (Allocate, Let)) or (isinstance(s, For) and _is_grid(s)):
        return replace(s, body=_sunk(s.body, consumers))
    if not isinstance(s, Seq):
        return s
    k = _parting(s)
    if k is None or isinstance(s.stmts[k], Barrier):
        return s
    before = s.stmts[:k]
    leaders = tuple(x for x in before if _sets_own_registers(x, consumers, before))
    stay = tuple(x for x in before if not any(x is y for y in leaders))
    return Seq((*stay, _followed(_sunk(s.stmts[k], consumers), leaders, s.stmts[k + 1 :])))


def _followed(s: Stmt, leaders: tuple[Stmt, ...], followers: tuple[Stmt, ...]) -> Stmt:
    """`s` (`_sunk`) with `leaders` right after its last barrier and `followers` after
    everything, inside `s`'s allocations and lets, in the sequence that holds the barrier."""
    if not (leaders or followers):
        return s
    if isinstance(s, (Allocate, Let)):
        return replace(s, body=_followed(s.body, leaders, followers))
    k = _parting(s) if isinstance(s, Seq) else None
    if k is None:
        raise _Mixed
    if isinstance(s.stmts[k], Barrier):
        return Seq((*s.stmts[: k + 1], *leaders, *s.stmts[k + 1 :], *followers))
    return Seq((*s.stmts[:k], _followed(s.stmts[k], leaders, followers), *s.stmts[k + 1 :]))


def _sets_own_registers(s: Stmt, consumers: int, among: tuple[Stmt, ...]) -> bool:
    """`s` is the consumers' and stores only to registers that no other of `among` uses."""
    if not _consumers(s, consumers):
        return False
    if any(isinstance(n, (Barrier, MBarrier, BulkCopy, AsyncCopy)) for n in walk_stmt(s)):
        return False
    written = {id(n.buffer): n.buffer for n in walk_stmt(s) if isinstance(n, Store)}
    written |= {id(n.dst.buffer): n.dst.buffer for n in walk_stmt(s) if isinstance(n, MatrixOp)}
    if not written or any(b.scope not in REGISTER_SCOPES for b in written.values()):
        return False
    others = [x for x in among if x is not s]
    return not any(_uses(x, b) for x in others for b in written.values())


def _parted(s: Stmt, role: _Roles, count: int) -> Stmt:
    """`s` with what follows its last block barrier (`_sunk`: all in the barrier's sequence)
    run by each role apart, after handing the registers over."""
    if isinstance(s, (Allocate, Let)) or (isinstance(s, For) and _is_grid(s)):
        return replace(s, body=_parted(s.body, role, count))
    k = _parting(s) if isinstance(s, Seq) else None
    if k is None:
        raise _Mixed
    if not isinstance(s.stmts[k], Barrier):
        return Seq((*s.stmts[:k], _parted(s.stmts[k], role, count), *s.stmts[k + 1 :]))
    rest = Seq(s.stmts[k + 1 :])
    if not any(is_producer(n) for n in walk_stmt(rest)):
        raise _Mixed
    z = role.z
    produce = role.producer(rest) or Seq(())
    consume = role.consumer(rest) or Seq(())
    then = Seq((SetRegisters(PRODUCER_REGISTERS, grow=False), produce))
    otherwise = Seq((SetRegisters(count, grow=True), consume))
    mine = const(role.warpgroups - 1, z.dtype)
    parting = If(Compare("==", z, mine), then, otherwise)
    warpgroups = const(role.warpgroups, z.dtype)
    loop = For(z, const(0, z.dtype), warpgroups, "bound", parting, "threadIdx.z")
    return Seq((*s.stmts[: k + 1], loop))


class _Roles:
    """The two projections of the statements after the parting (module doc)."""

    def __init__(self, z: Var, warpgroups: int) -> None:
        self.z = z
        self.warpgroups = warpgroups
        self.consumers = warpgroups - 1

    def producer(self, s: Stmt) -> Stmt | None:
        """`s` as the producer's warpgroup runs it (None: nothing)."""
        if is_producer(s):
            own = s.body
            if isinstance(own, If) and own.otherwise is None and _picks_last(own.cond, s):
                own = own.then
            return substitute_stmt(own, {s.var: self.z})
        if _consumers(s, self.consumers) or isinstance(s, Barrier):
            return None
        return self._around(s, self.producer, for_producer=True)

    def consumer(self, s: Stmt) -> Stmt | None:
        """`s` as the consumer warpgroups run it (None: nothing)."""
        if is_producer(s):
            return None
        if isinstance(s, Barrier):
            return s if s.warpgroup or s.among else Barrier(among=WARPGROUP * self.consumers)
        if _consumers(s, self.consumers):
            return self._inside(substitute_stmt(s.body, {s.var: self.z}))
        return self._around(s, self.consumer, for_producer=False)

    def _inside(self, s: Stmt) -> Stmt:
        """A consumers' statement: its barriers theirs alone."""
        if isinstance(s, Barrier) and not (s.warpgroup or s.among):
            return Barrier(among=WARPGROUP * self.consumers)
        if isinstance(s, Seq):
            return Seq(tuple(self._inside(x) for x in s.stmts))
        if isinstance(s, (For, Allocate, Let)):
            return replace(s, body=self._inside(s.body))
        if isinstance(s, If):
            otherwise = None if s.otherwise is None else self._inside(s.otherwise)
            return If(s.cond, self._inside(s.then), otherwise)
        return s

    def _around(self, s: Stmt, project, for_producer: bool) -> Stmt | None:
        """The control flow around both roles' statements, projected."""
        if isinstance(s, Seq):
            kept = [x for x in (project(y) for y in s.stmts) if x is not None]
            return Seq(tuple(kept)) if kept else None
        if isinstance(s, (Allocate, Let)):
            body = project(s.body)
            if body is None:
                return None
            if isinstance(s, Allocate) and for_producer and _uses(body, s.buffer):
                raise _Mixed  # the producer's statements never use the consumers' buffers
            if isinstance(s, Allocate) and for_producer:
                return body
            return replace(s, body=body)
        if isinstance(s, For) and s.kind != "bound":
            body = project(s.body)
            return None if body is None else replace(s, body=body)
        if isinstance(s, If):
            then = project(s.then)
            otherwise = None if s.otherwise is None else project(s.otherwise)
            if then is None and otherwise is None:
                return None
            return If(s.cond, then or Seq(()), otherwise)
        raise _Mixed


def is_producer(s: Stmt) -> bool:
    """`s` runs on the producer's warpgroup alone (a loop bound to ``threadIdx.z`` that picks
    it)."""
    return isinstance(s, For) and s.kind == "bound" and s.var.kind == PRODUCER


def _consumers(s: Stmt, consumers: int) -> bool:
    """`s` runs on the consumer warpgroups alone: a loop bound to ``threadIdx.z`` over them."""
    return (
        isinstance(s, For)
        and s.kind == "bound"
        and s.thread == "threadIdx.z"
        and isinstance(s.extent, Const)
        and s.extent.value == consumers
    )


def _picks_last(cond: Expr, producer: For) -> bool:
    """`cond` is ``z == the last warpgroup``, the test that opens the producer's statement."""
    last = int(producer.extent.value) - 1 if isinstance(producer.extent, Const) else None
    return (
        isinstance(cond, Compare)
        and cond.op == "=="
        and cond.a is producer.var
        and isinstance(cond.b, Const)
        and cond.b.value == last
    )


def _uses(s: Stmt, buffer: Buffer) -> bool:
    return reads(s, buffer) or writes(s, buffer)
