"""Which form a block collective takes (`allreduce`: warp shuffles, warps and shared memory, or
shared memory alone) and the shared scratch it needs, decided from the block's shape alone;
apart from LLVM, since the kernel's shared layout (`nvptx.plan`) sizes the scratch."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...ir import dtype as dt
from ...loopir.core.nodes import ThreadAllReduce

WARP = 32
TAGS = ("threadIdx.x", "threadIdx.y", "threadIdx.z")


@dataclass(frozen=True)
class Layout:
    """How one collective runs in a block: its `form` ("copy", "warp", "warps", "shared"), the
    group size, and the scratch elements per source."""

    form: str
    group: int
    scratch: int


def layout(stmt: ThreadAllReduce, block: tuple[int, int, int]) -> Layout:
    """The form the collective `stmt` takes in a block of shape `block` (module docstring)."""
    if stmt.lanes:  # groups of lanes within each warp
        return Layout("warp", stmt.lanes, 0)
    total = block[0] * block[1] * block[2]
    reduced = [tag in stmt.tags and n > 1 for tag, n in zip(TAGS, block)]
    group = math.prod(n for n, r in zip(block, reduced) if r)
    if group == 1:
        return Layout("copy", 1, 0)
    kept = [not r and n > 1 for n, r in zip(block, reduced)]
    contiguous = not any(reduced[k] and any(kept[:k]) for k in range(3))
    if contiguous and (WARP % group == 0 or total <= WARP):
        return Layout("warp", group, 0)
    if contiguous and group % WARP == 0:
        return Layout("warps", group, total // WARP)
    return Layout("shared", group, total)


def scratch_sizes(stmt: ThreadAllReduce, block: tuple[int, int, int]) -> tuple[int, ...]:
    """Bytes of shared scratch per source of the collective (none for the forms without)."""
    count = layout(stmt, block).scratch
    if count == 0:
        return ()
    return tuple(count * dt.itemsize(c.dtype) for c in stmt.combiners)
