"""Block collectives (`ThreadAllReduce`, a reduce axis bound to ``threadIdx``) through
``__local`` memory.

Each work-item writes its value into a scratch array of one slot per work-item of the group,
numbered ``x + X*(y + Y*z)``; after a barrier every member of a group (the work-items that
agree on the indices not reduced) folds the group's slots in that order, from the reducer's
identity, so that all members get the same bits; a last barrier lets the scratch be written
again (by the next iteration of a loop around the collective). Tuple reducers (argmax) fold
their components together. The collectives of a warp's lanes (`lanes`, tensor-core
accumulators' rows) need warp shuffles, which OpenCL C 1.2 lacks: `unsupported` refuses them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...loopir.core.nodes import ThreadAllReduce
from .expr import HARDWARE
from .types import compute_type

if TYPE_CHECKING:
    from .stmt import KernelWriter

_TAGS = ("threadIdx.x", "threadIdx.y", "threadIdx.z")


def emit_allreduce(w: KernelWriter, stmt: ThreadAllReduce) -> None:
    """Every work-item stores its group's combination of each source into the matching
    result."""
    p, block = w.p, w.kernel.block
    reduced = [tag in stmt.tags and n > 1 for tag, n in zip(_TAGS, block)]
    if not any(reduced):  # groups of one: each its own value
        for src, res in zip(stmt.sources, stmt.results):
            w.line(f"{p.buffer(res)}[0] = {p.buffer(src)}[0];")
        return
    own = [f"(int){HARDWARE[tag]}" for tag in _TAGS]
    slots = [p.names.fresh("red_buf") for _ in stmt.sources]
    for name, c in zip(slots, stmt.combiners):
        w.local_array(compute_type(c.dtype), name, block[0] * block[1] * block[2])
    with w.block(""):
        me = p.names.fresh("tid")
        w.line(f"int {me} = {_linear(own, block)};")
        for name, src in zip(slots, stmt.sources):
            w.line(f"{name}[{me}] = {p.buffer(src)}[0];")
        w.barrier()
        accs = [p.names.fresh("acc") for _ in stmt.combiners]
        for acc, c in zip(accs, stmt.combiners):
            w.line(f"{compute_type(c.dtype)} {acc} = {p(c.identity)};")
        members = list(own)
        heads = []
        for d in reversed(range(3)):  # z outermost: the members in slot order
            if reduced[d]:
                m = members[d] = p.names.fresh("xyz"[d] + "_member")
                heads.append(f"for (int {m} = 0; {m} < {block[d]}; ++{m})")
        _fold(w, stmt, heads, slots, accs, _linear(members, block))
        for acc, res in zip(accs, stmt.results):
            w.line(f"{p.buffer(res)}[0] = {acc};")
        w.barrier()


def _fold(w: KernelWriter, stmt: ThreadAllReduce, heads: list[str], slots, accs, slot) -> None:
    """The loops over a group's members, and in them one step of the reducer."""
    if heads:
        with w.block(heads[0]):
            _fold(w, stmt, heads[1:], slots, accs, slot)
        return
    p = w.p
    for acc, name, c in zip(accs, slots, stmt.combiners):
        t = compute_type(c.dtype)
        w.line(f"{t} {p.names(c.lhs, c.lhs.name)} = {acc};")
        w.line(f"{t} {p.names(c.rhs, c.rhs.name)} = {name}[{slot}];")
    nexts = [p.names.fresh("next") for _ in stmt.combiners]
    for following, c in zip(nexts, stmt.combiners):
        w.line(f"{compute_type(c.dtype)} {following} = {p(c.result)};")
    for acc, following in zip(accs, nexts):
        w.line(f"{acc} = {following};")


def _linear(index: list[str], block: tuple[int, int, int]) -> str:
    """``x + X*(y + Y*z)``, leaving out the dimensions of one work-item."""
    text = ""
    for d in reversed(range(3)):
        if block[d] == 1:
            continue
        text = index[d] if not text else f"{index[d]} + {block[d]} * ({text})"
    return text or "0"
