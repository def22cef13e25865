"""Block collectives (`ThreadAllReduce`, a reduce axis bound to ``threadIdx``) through
``__local`` memory.

Each work-item writes its value into a scratch array of one slot per work-item of the block,
numbered ``x + X*(y + Y*z)``, and waits at a barrier. A group (the work-items that agree on
the indices not reduced) of a power of two consecutive slots, TE's usual row reduction on
``threadIdx.x``, then combines as a tree, halving the live slots at each step, each pair in
slot order; any other group has every member fold its slots in order from the reducer's
identity. Either way all members read the same bits, and a last barrier lets the scratch be
written again (by the next iteration of a loop around the collective). Tuple reducers (argmax)
combine their components together. The collectives of a warp's lanes (`lanes`, tensor-core
accumulators' rows) need warp shuffles, which OpenCL C 1.2 lacks: `unsupported` refuses them.
"""

from __future__ import annotations

import math
from contextlib import ExitStack
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
        group = math.prod(n for n, r in zip(block, reduced) if r)
        if _contiguous(reduced, block) and group & (group - 1) == 0:
            totals = _tree(w, stmt, slots, me, group)
        else:
            totals = _fold(w, stmt, slots, own, reduced)
        for total, res in zip(totals, stmt.results):
            w.line(f"{p.buffer(res)}[0] = {total};")
        w.barrier()


def _contiguous(reduced: list[bool], block: tuple[int, int, int]) -> bool:
    """Whether each group is a run of consecutive slots: no dimension of more than one
    work-item that is kept comes before a reduced one."""
    kept = [not r and n > 1 for r, n in zip(reduced, block)]
    return not any(reduced[d] and any(kept[:d]) for d in range(3))


def _tree(w: KernelWriter, stmt: ThreadAllReduce, slots: list[str], me: str, group: int):
    """A group of a power of two consecutive slots halved in place, each member of the lower
    half combining its slot (left) with the one `stride` above (right): log2(group) steps,
    a barrier after each; the group's first slot holds the total."""
    p = w.p
    lane, stride = p.names.fresh("lane"), p.names.fresh("stride")
    w.line(f"int {lane} = {me} & {group - 1};")
    with w.block(f"for (int {stride} = {group // 2}; {stride} > 0; {stride} >>= 1)"):
        with w.block(f"if ({lane} < {stride})"):
            left = [f"{name}[{me}]" for name in slots]
            right = [f"{name}[{me} + {stride}]" for name in slots]
            for name, value in zip(slots, _combine(w, stmt, left, right)):
                w.line(f"{name}[{me}] = {value};")
        w.barrier()
    return [f"{name}[{me} - {lane}]" for name in slots]


def _fold(w: KernelWriter, stmt: ThreadAllReduce, slots: list[str], own: list[str], reduced):
    """Every member folding its group's slots in order, from the reducer's identity (any
    group shape)."""
    p, block = w.p, w.kernel.block
    accs = [p.names.fresh("acc") for _ in stmt.combiners]
    for acc, c in zip(accs, stmt.combiners):
        w.line(f"{compute_type(c.dtype)} {acc} = {p(c.identity)};")
    members, heads = list(own), []
    for d in reversed(range(3)):  # z outermost: the members in slot order
        if reduced[d]:
            m = members[d] = p.names.fresh("xyz"[d] + "_member")
            heads.append(f"for (int {m} = 0; {m} < {block[d]}; ++{m})")
    slot = _linear(members, block)
    with ExitStack() as loops:
        for head in heads:
            loops.enter_context(w.block(head))
        right = [f"{name}[{slot}]" for name in slots]
        for acc, value in zip(accs, _combine(w, stmt, accs, right)):
            w.line(f"{acc} = {value};")
    return accs


def _combine(w: KernelWriter, stmt: ThreadAllReduce, left: list[str], right: list[str]):
    """One step of the reducer on `left` and `right` (per component): declares its operands
    and results, and returns the results' names (the components combine together)."""
    p = w.p
    for c, x, y in zip(stmt.combiners, left, right):
        t = compute_type(c.dtype)
        w.line(f"{t} {p.names(c.lhs, c.lhs.name)} = {x};")
        w.line(f"{t} {p.names(c.rhs, c.rhs.name)} = {y};")
    results = [p.names.fresh("next") for _ in stmt.combiners]
    for result, c in zip(results, stmt.combiners):
        w.line(f"{compute_type(c.dtype)} {result} = {p(c.result)};")
    return results


def _linear(index: list[str], block: tuple[int, int, int]) -> str:
    """``x + X*(y + Y*z)``, leaving out the dimensions of one work-item."""
    text = ""
    for d in reversed(range(3)):
        if block[d] == 1:
            continue
        text = index[d] if not text else f"{index[d]} + {block[d]} * ({text})"
    return text or "0"
