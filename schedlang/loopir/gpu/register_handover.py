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
warp that gave registers up no longer has. So the roles must part for good: once the
producer's loop starts, the kernel is ``if threadIdx.z == producer: (give up; the producer's
statements) else: (take; everything else)``, and nothing after that point is run by both.
Where the statements after the producer's loop are the consumers' alone (loops bound to
``threadIdx.z`` over the consumer warpgroups, or barriers, which then become a named barrier
of the consumers' threads), the kernel is rewritten so; anything else (a block collective, a
statement every thread runs, the loop inside another loop, as over a persistent block's tiles)
leaves the kernel as it was, with the entry's registers for all.
"""

from __future__ import annotations

from dataclasses import replace

from ...ir.expr import Compare, Const, Expr, Var, const
from ..core.nodes import (
    FRAGMENT_SCOPES,
    Allocate,
    AsyncCopy,
    Barrier,
    Buffer,
    BulkCopy,
    For,
    If,
    Let,
    Load,
    MatrixOp,
    MBarrier,
    Seq,
    SetRegisters,
    Stmt,
    Store,
)
from ..core.visit import stmt_exprs, substitute_stmt, transform_stmt, walk_expr, walk_stmt
from ..memory.bulk_pipeline import PRODUCER

WARPGROUP = 128
REGISTER_FILE = 65536
PRODUCER_REGISTERS = 24  # the least setmaxnreg gives
REGISTER_SCOPES = ("local", *FRAGMENT_SCOPES)
MOST_REGISTERS = 240  # FlashAttention 3's and CUTLASS's consumers (a multiple of 8, < 256)


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
    at the producer's loop and the registers handed over, and the consumers' count; or
    `body` and 0 where it does not have that shape (module doc)."""
    count = consumer_registers(block)
    if not count or not any(_producer_loop(s) for s in walk_stmt(body)):
        return body, 0
    body = _sunk(body, block[2] - 1)
    parted = []

    def part(s: Stmt) -> Stmt | None:
        if not isinstance(s, Seq):
            return None
        roles = [k for k, x in enumerate(s.stmts) if _producer_loop(x)]
        if not roles:
            return None
        first = roles[0]
        split = _roles(Seq(s.stmts[first + 1 :]), block[2] - 1)
        if split is None:
            return None
        producer, consumer = split
        parted.append(s)
        return Seq(
            (*s.stmts[:first], _parted([s.stmts[first], *producer], consumer, block[2], count))
        )

    done = transform_stmt(body, part)
    return (done, count) if len(parted) == 1 else (body, 0)


def _sunk(s: Stmt, consumers: int) -> Stmt:
    """`s` with the statements that follow the producer's loop at every level moved into the
    sequence that holds it, inside the allocations and lets around it (their buffers then live
    a little longer), and so the consumers' statements before it that only set their own
    registers (an accumulator's zeros: kept from the entry, where every thread has 168
    registers or fewer, they were live there and ptxas refused the kernel): the roles can part
    there, with all the consumers' work after it."""
    if isinstance(s, (Allocate, Let)) or (isinstance(s, For) and s.thread.startswith("block")):
        return replace(s, body=_sunk(s.body, consumers))
    if not isinstance(s, Seq):
        return s
    held = [k for k, x in enumerate(s.stmts) if any(_producer_loop(n) for n in walk_stmt(x))]
    if len(held) != 1 or _producer_loop(s.stmts[held[0]]):
        return s
    k = held[0]
    before = s.stmts[:k]
    leaders = tuple(x for x in before if _sets_own_registers(x, consumers, before))
    stay = tuple(x for x in before if not any(x is y for y in leaders))
    return Seq((*stay, _followed(_sunk(s.stmts[k], consumers), leaders, s.stmts[k + 1 :])))


def _sets_own_registers(s: Stmt, consumers: int, among: tuple[Stmt, ...]) -> bool:
    """`s` is the consumers' and stores only to registers that no other of `among` uses."""
    if not _consumers_only(s, consumers) or any(isinstance(n, Barrier) for n in walk_stmt(s)):
        return False
    written = {id(n.buffer): n.buffer for n in walk_stmt(s) if isinstance(n, Store)}
    written |= {id(n.dst.buffer): n.dst.buffer for n in walk_stmt(s) if isinstance(n, MatrixOp)}
    if not written or any(b.scope not in REGISTER_SCOPES for b in written.values()):
        return False
    if any(isinstance(n, (MBarrier, BulkCopy, AsyncCopy)) for n in walk_stmt(s)):
        return False
    others = [x for x in among if x is not s]
    return not any(_touches(x, b) for x in others for b in written.values())


def _followed(s: Stmt, leaders: tuple[Stmt, ...], followers: tuple[Stmt, ...]) -> Stmt:
    """`s` (`_sunk`: what holds the producer's loop comes last in it) with `leaders` right
    after the producer's loop and `followers` after everything, inside `s`'s allocations and
    lets, in the sequence that holds the loop."""
    if not (leaders or followers):
        return s
    if isinstance(s, (Allocate, Let)):
        return replace(s, body=_followed(s.body, leaders, followers))
    if isinstance(s, Seq):
        last = s.stmts[-1]
        if not _producer_loop(last) and any(_producer_loop(n) for n in walk_stmt(last)):
            return Seq((*s.stmts[:-1], _followed(last, leaders, followers)))
        k = next(k for k, x in enumerate(s.stmts) if _producer_loop(x))
        return Seq((*s.stmts[: k + 1], *leaders, *s.stmts[k + 1 :], *followers))
    return Seq((s, *leaders, *followers))


def _producer_loop(s: Stmt) -> bool:
    """`s` is the producer's statement holding its loop of copies."""
    return (
        isinstance(s, For)
        and s.kind == "bound"
        and s.var.kind == PRODUCER
        and any(isinstance(n, For) and n.kind == "serial" for n in walk_stmt(s))
    )


def _roles(s: Stmt, consumers: int) -> tuple[list[For], list[Stmt]] | None:
    """`s` cut into the producer's statements and the consumers', each in its order (a
    causal mask's diagonal step, made straight code, holds both: the consumers' inside the
    step's allocations, which the producer's never use), or None where a statement is
    neither's alone."""
    if _producers_only(s):
        return [s], []
    if isinstance(s, Seq):
        producer: list[For] = []
        consumer: list[Stmt] = []
        for x in s.stmts:
            split = _roles(x, consumers)
            if split is None:
                return None
            producer += split[0]
            consumer += split[1]
        return producer, consumer
    if isinstance(s, Allocate) and not _consumers_only(s, consumers):
        split = _roles(s.body, consumers)
        if split is None or any(_touches(p, s.buffer) for p in split[0]):
            return None
        return split[0], [replace(s, body=Seq(tuple(split[1])))] if split[1] else []
    return ([], [s]) if _consumers_only(s, consumers) else None


def _touches(s: Stmt, buffer: Buffer) -> bool:
    """`s` stores to `buffer`, reads it, or has it as a tile of a product."""
    for n in walk_stmt(s):
        if getattr(n, "buffer", None) is buffer:
            return True
        if isinstance(n, MatrixOp) and any(t.buffer is buffer for t in (n.dst, *n.srcs)):
            return True
        for e in stmt_exprs(n):
            if any(isinstance(x, Load) and x.buffer is buffer for x in walk_expr(e)):
                return True
    return False


def _producers_only(s: Stmt) -> bool:
    """`s` runs on the producer's thread alone (its loop of copies after a causal mask's
    second loop of steps, say): the roles meet only at memory barriers, so it may run in the
    producer's branch, apart from the consumers' statements it stood between."""
    return isinstance(s, For) and s.kind == "bound" and s.var.kind == PRODUCER


def _consumers_only(s: Stmt, consumers: int) -> bool:
    """`s` runs on the consumer warpgroups alone: a loop bound to ``threadIdx.z`` over them,
    a barrier, or allocations and lets around such statements."""
    if isinstance(s, Barrier):
        return not s.warpgroup and not s.among
    if isinstance(s, (Allocate, Let)):
        return _consumers_only(s.body, consumers)
    if isinstance(s, Seq):
        return all(_consumers_only(x, consumers) for x in s.stmts)
    return (
        isinstance(s, For)
        and s.kind == "bound"
        and s.thread == "threadIdx.z"
        and isinstance(s.extent, Const)
        and s.extent.value == consumers
    )


def _parted(producer: list[For], consumer: list[Stmt], warpgroups: int, count: int) -> Stmt:
    """``for z (threadIdx.z): if z == the producer's: (give up; producer) else: (take;
    consumer)``."""
    z = Var("threadIdx.z.role", producer[0].var.dtype, "axis")
    threads = WARPGROUP * (warpgroups - 1)
    mine = const(warpgroups - 1, z.dtype)
    produce = []
    for loop in producer:
        own = loop.body
        if isinstance(own, If) and own.otherwise is None and _is_producer_test(own.cond, loop):
            own = own.then
        produce.append(substitute_stmt(own, {loop.var: z}))
    consume = [_for_consumer(x, z, threads) for x in consumer]
    then = Seq((SetRegisters(PRODUCER_REGISTERS, grow=False), *produce))
    otherwise = Seq((SetRegisters(count, grow=True), *consume))
    extent = const(warpgroups, z.dtype)
    roles = If(Compare("==", z, mine), then, otherwise)
    return For(z, const(0, z.dtype), extent, "bound", roles, "threadIdx.z")


def _is_producer_test(cond: Expr, producer: For) -> bool:
    """`cond` is ``z == the last warpgroup``, the test that opens the producer's statement."""
    last = int(producer.extent.value) - 1 if isinstance(producer.extent, Const) else None
    return (
        isinstance(cond, Compare)
        and cond.op == "=="
        and cond.a is producer.var
        and isinstance(cond.b, Const)
        and cond.b.value == last
    )


def _for_consumer(s: Stmt, z: Var, threads: int) -> Stmt:
    """`s` as the consumer threads run it inside their branch: its loops over the consumer
    warpgroups are the branch's own index, its barriers theirs alone."""

    def visit(x: Stmt) -> Stmt | None:
        if isinstance(x, Barrier) and not (x.warpgroup or x.among):
            return Barrier(among=threads)
        if isinstance(x, For) and x.kind == "bound" and x.thread == "threadIdx.z":
            return transform_stmt(substitute_stmt(x.body, {x.var: z}), visit)
        return None

    return transform_stmt(s, visit)
