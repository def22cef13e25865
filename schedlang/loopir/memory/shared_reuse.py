"""Shared memory given again to a later buffer once an earlier one's sweep is over.

A block's shared memory is laid out one buffer after another (`nvptx.shared_layout`), each
for the whole kernel. Attention's Q tile (32 KB at head dim 128) is read by the scores of the
last step and never after, while the copy engine's store of the output (`bulk_store`) needs
16 KB a warpgroup to stage it, and the K and V pipeline has taken the rest of the 227 KB. The
staging can take Q's region: every access of Q comes before the first store, no loop that the
threads run again holds both (a persistent block's loop over tiles reloads Q after a store,
whose engine may still be reading), and one barrier of the threads that use either stands
between them. `finished_before` finds such buffers; the caller places that barrier.
"""

from __future__ import annotations

from math import prod

from ...ir import dtype as dt
from ...ir.expr import Const
from ..core.nodes import Allocate, Buffer, For, If, Load, Stmt
from ..core.visit import stmt_buffers, stmt_children, stmt_exprs, walk_expr


def finished_before(kernel: Stmt, later: list[Stmt]) -> list[tuple[Buffer, int]]:
    """The shared buffers of `kernel` (with their bytes, largest first) whose every access
    comes before each statement of `later` in program order, outside every serial loop that
    holds one of them: their regions are free from the first of `later` on."""
    order: dict[int, int] = {}  # statement -> position in program order
    loops: dict[int, frozenset[int]] = {}  # statement -> the serial loops around it
    accesses: dict[int, list[int]] = {}  # buffer -> the statements that touch it
    buffers: dict[int, Buffer] = {}

    def visit(s: Stmt, around: frozenset[int]) -> None:
        order[id(s)] = len(order)
        loops[id(s)] = around
        if isinstance(s, Allocate) and s.buffer.scope == "shared":
            buffers[id(s.buffer)] = s.buffer
        for buffer in _touched(s):
            accesses.setdefault(id(buffer), []).append(id(s))
        inner = around | {id(s)} if isinstance(s, For) and s.kind == "serial" else around
        for kid in stmt_children(s):
            visit(kid, inner)

    visit(kernel, frozenset())
    first = min(order[id(s)] for s in later)
    held = frozenset().union(*(loops[id(s)] for s in later))
    free = []
    for key, buffer in buffers.items():
        touching = accesses.get(key, [])
        if all(order[s] < first and not loops[s] & held for s in touching):
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
