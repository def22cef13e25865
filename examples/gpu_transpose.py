"""Matrix transpose through shared memory: ``T[i, j] = A[j, i]``.

Read straight, a transpose either reads or writes with a stride of a whole row, and a warp's
32 accesses touch 32 different 128-byte lines. Staged through shared memory, both sides are
contiguous: a block reads a 32x32 tile of A row by row (``cache_read`` shared), then writes the
tile of T row by row, reading the shared tile down its columns. Rows of the shared tile are
padded to 33 floats (``storage_align``) so that a column falls in 32 different banks. 32x8
threads per block, each moving 4 elements.
"""

from __future__ import annotations

import schedlang as sl

TILE = 32
ROWS = 8  # threadIdx.y extent: each thread moves TILE / ROWS elements


def transpose(m, n) -> tuple[sl.Tensor, sl.Tensor]:
    a = sl.placeholder((m, n), name="A")
    t = sl.compute((n, m), lambda i, j: a[j, i], name="T")
    return a, t


def schedule(a: sl.Tensor, t: sl.Tensor, tile: int = TILE, rows: int = ROWS) -> sl.Schedule:
    s = sl.create_schedule(t.op)
    aa = s.cache_read(a, "shared", [t])
    by, bx, yi, xi = s[t].tile(t.op.axis[0], t.op.axis[1], tile, tile)
    _, ty = s[t].split(yi, factor=rows)
    s[t].bind(by, sl.thread_axis("blockIdx.y"))
    s[t].bind(bx, sl.thread_axis("blockIdx.x"))
    s[t].bind(ty, sl.thread_axis("threadIdx.y"))
    s[t].bind(xi, sl.thread_axis("threadIdx.x"))
    s[aa].compute_at(s[t], bx)
    ay, ax = s[aa].op.axis
    _, aty = s[aa].split(ay, factor=rows)
    s[aa].bind(aty, sl.thread_axis("threadIdx.y"))
    s[aa].bind(ax, sl.thread_axis("threadIdx.x"))
    s[aa].storage_align(ay, tile, 1)
    return s


def build(m, n, target: str = "cuda", **options):
    a, t = transpose(m, n)
    return sl.build(schedule(a, t, **options), [a, t], target=target)
