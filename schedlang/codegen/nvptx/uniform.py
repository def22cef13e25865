"""Running uniform stores on one thread of the block.

Code outside the loops bound to a ``threadIdx`` tag is run by every thread of that tag alike
(the loop IR's model, see `loopir.memory.barriers`). Storing one value many times is harmless, but a
read-modify-write is not: ``R[i] = R[i] + x`` run by several warps, which the hardware does not
keep in step, adds `x` more than once or loses updates. So a store to shared or global memory
is wrapped in loops bound to each thread tag it is uniform in, of extent 1: the code generator
turns those into ``if threadIdx.t < 1``. Stores to local memory stay with every thread, since
each thread has its own copy, which later per-thread code may read. An asynchronous copy
(`AsyncCopy`) is a store done later, into shared memory, and is narrowed exactly like one; the
commits and waits of copies (`AsyncCommit`, `AsyncWait`) are per thread and stay with every
thread: each commits and waits for its own groups (those of a thread that copied nothing are
empty and complete at once), and the barrier after the wait, which every thread reaches, is what
shows the narrowed thread's data to the others.

Whole uniform statements, and runs of them, are wrapped where they can be (no barrier, block
collective, tensor-core operation, asynchronous commit or wait, which every thread must reach,
no thread loop and no local store inside), so a serial accumulation loop costs one branch
rather than one per store. A tensor-core operation is never narrowed: each lane of the warp
stores its own elements.
"""

from __future__ import annotations

from dataclasses import replace

from ...ir.expr import Var, const
from ...loopir.core.nodes import (
    Allocate,
    AsyncCommit,
    AsyncCopy,
    AsyncWait,
    Barrier,
    BulkCopy,
    BulkStore,
    BulkWait,
    For,
    If,
    Let,
    MatrixOp,
    MBarrier,
    Seq,
    Stmt,
    Store,
    ThreadAllReduce,
    seq,
)
from ...loopir.core.visit import walk_stmt

_THREAD_TAGS = ("threadIdx.x", "threadIdx.y", "threadIdx.z")
# never narrowed (bulk copies and memory barriers stand in the thread loops that pick their threads)
_EVERY_THREAD = (
    Barrier,
    ThreadAllReduce,
    MatrixOp,
    AsyncCommit,
    AsyncWait,
    BulkCopy,
    BulkStore,
    BulkWait,
    MBarrier,
)


def guard_uniform_stores(body: Stmt, block: tuple[int, int, int]) -> Stmt:
    """`body` (one kernel, launched with `block` threads) with each shared or global store
    executed by one thread per distinct value of the thread indices it depends on."""
    tags = tuple(tag for tag, n in zip(_THREAD_TAGS, block) if n > 1)
    return _guard(body, frozenset(), tags) if tags else body


def _guard(s: Stmt, bound: frozenset[str], tags: tuple[str, ...]) -> Stmt:
    if _is_thread_loop(s):
        body = _guard(s.body, bound | {s.thread}, tags)
        return s if body is s.body else replace(s, body=body)
    missing = [tag for tag in tags if tag not in bound]
    if not missing:
        return s
    if _wrappable(s):
        return _one_thread(s, missing)
    if isinstance(s, Seq):
        return _guard_seq(s, bound, tags, missing)
    if isinstance(s, (For, Let, Allocate)):
        return replace(s, body=_guard(s.body, bound, tags))
    if isinstance(s, If):
        otherwise = None if s.otherwise is None else _guard(s.otherwise, bound, tags)
        return If(s.cond, _guard(s.then, bound, tags), otherwise)
    return s  # local stores, barriers, collectives (tensor-core operations among them),
    # asynchronous commits and waits


def _guard_seq(s: Seq, bound: frozenset[str], tags: tuple[str, ...], missing: list[str]) -> Stmt:
    """Each run of consecutive wrappable statements wrapped once, the others recursed into."""
    out: list[Stmt] = []
    run: list[Stmt] = []
    for child in (*s.stmts, None):
        if child is not None and _wrappable(child):
            run.append(child)
            continue
        if run:
            out.append(_one_thread(seq(*run), missing))
            run = []
        if child is not None:
            out.append(_guard(child, bound, tags))
    return seq(*out)


def _is_thread_loop(s: Stmt) -> bool:
    return isinstance(s, For) and s.kind == "bound" and s.thread in _THREAD_TAGS


def _wrappable(s: Stmt) -> bool:
    shared_store = False
    for node in walk_stmt(s):
        if isinstance(node, _EVERY_THREAD) or _is_thread_loop(node):
            return False
        if isinstance(node, AsyncCopy):
            shared_store = True  # its destination is shared memory
        elif isinstance(node, Store):
            if node.buffer.scope == "local":
                return False
            shared_store = True
    return shared_store


def _one_thread(s: Stmt, tags: list[str]) -> Stmt:
    for tag in tags:
        var = Var(f"{tag}.uniform", "int32", "axis")
        s = For(var, const(0, "int32"), const(1, "int32"), "bound", s, tag)
    return s
