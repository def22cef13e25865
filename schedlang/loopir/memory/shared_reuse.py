"""Shared memory given again to a later buffer once an earlier one's sweep is over.

A block's shared memory is laid out one buffer after another (`nvptx.shared_layout`), each
for the whole kernel. Attention at head dim 128 takes 224 KB of the 227 a block has (Q's tile,
three stages of K and V), and the copy engine's store of the output (`bulk_store`) needs 16
KB a warpgroup more to stage it. Every tile of K, V and Q is read for the last time by the
last step's products, before the first store: the staging can take one of their regions,
provided no loop that the threads run again holds both (a persistent block's loop over tiles
refills them after a store whose engine may still be reading) and one barrier of the threads
that use either stands between them. `finished_before` finds such buffers, largest first (at
d = 128, K's tiles); the caller places that barrier.

Accesses are where the statements stand in program order: an asynchronous copy into a
buffer counts where it is issued. The pipelines schedlang builds read every stage they fill
(each copy is waited for before its products), so a buffer's last read follows its last copy;
a memory barrier's array is never given away (its barriers would need invalidating first).
"""

from __future__ import annotations

from math import prod

from ...ir import dtype as dt
from ...ir.expr import Const
from ..core.nodes import Allocate, Buffer, For, If, Load, MBarrier, Stmt
from ..core.visit import stmt_buffers, stmt_children, stmt_exprs, walk_expr


def finished_before(kernel: Stmt, later: list[Stmt]) -> list[tuple[Buffer, int]]:
    """The shared buffers of `kernel` (with their bytes, largest first) whose every access
    comes before each statement of `later` in program order, outside every serial loop that
    holds one of them: their regions are free from the first of `later` on. A statement met
    twice (a subtree two branches share) counts at each place it stands."""
    wanted = {id(s) for s in later}
    accesses: dict[int, list[tuple[int, frozenset[int]]]] = {}  # buffer -> (place, loops)
    buffers: dict[int, Buffer] = {}
    barriers: set[int] = set()
    reached: list[tuple[int, frozenset[int]]] = []  # where `later` stands
    position = 0

    def visit(s: Stmt, around: frozenset[int]) -> None:
        nonlocal position
        here, position = position, position + 1
        if isinstance(s, Allocate) and s.buffer.scope == "shared":
            buffers[id(s.buffer)] = s.buffer
        if isinstance(s, MBarrier):
            barriers.update(id(b) for b in stmt_buffers(s))
        for buffer in _touched(s):
            accesses.setdefault(id(buffer), []).append((here, around))
        if id(s) in wanted:
            reached.append((here, around))
        inner = around | {here} if isinstance(s, For) and s.kind == "serial" else around
        for kid in stmt_children(s):
            visit(kid, inner)

    visit(kernel, frozenset())
    first = min(place for place, _ in reached)
    held = frozenset().union(*(loops for _, loops in reached))
    free = []
    for key, buffer in buffers.items():
        if key in barriers:
            continue
        touching = accesses.get(key, [])
        if all(place < first and not loops & held for place, loops in touching):
            nbytes = _bytes(buffer)
            if nbytes is not None:
                free.append((buffer, nbytes))
    return sorted(free, key=lambda pair: -pair[1])


def uniform_path(path: list[Stmt]) -> bool:
    """Whether every thread of the block that reaches the first statement of `path` reaches
    its last: no guard between them (a barrier there would wait for threads it keeps out)."""
    return not any(isinstance(s, If) for s in path)


def _bytes(buffer: Buffer) -> int | None:
    if not all(isinstance(n, Const) for n in buffer.shape):
        return None
    return prod(int(n) for n in buffer.shape) * dt.itemsize(buffer.dtype)


def _touched(s: Stmt) -> list[Buffer]:
    """The buffers statement `s` itself (not its sub-statements) reads or writes: those its
    expressions load and those its fields name."""
    found = [x.buffer for e in stmt_exprs(s) for x in walk_expr(e) if isinstance(x, Load)]
    if isinstance(s, Allocate):
        return found  # its buffer is allocated, not touched
    return found + stmt_buffers(s)
