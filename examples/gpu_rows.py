"""Row reductions on the GPU: the sum of each row, and a softmax over each row.

One block per row. Each thread first combines a strided share of the row on its own, 4
neighbouring floats per 16-byte load (``rfactor`` over the thread index, the four lanes
``vectorize``d), then the block's threads combine their partial results (the reduce axis bound
to ``threadIdx.x``: warp shuffles, then shared memory across warps).

The softmax ``exp(x - max) / sum(exp(x - max))`` needs three passes over a row. Its row is
staged once in shared memory (``cache_read`` shared at the row, 32 KB for 8192 floats), so
global memory is read once and written once; the maximum, the sum and the output all read the
shared copy. The maximum and the sum are each one collective over the block's threads, after
every thread has combined its share (``rfactor``, as in TE's reduction tutorial).
"""

from __future__ import annotations

import schedlang as sl

THREADS = 256
LANES = 4


def row_sum(m, n) -> tuple[sl.Tensor, sl.Tensor]:
    a = sl.placeholder((m, n), name="A")
    k = sl.reduce_axis((0, n), name="k")
    r = sl.compute((m,), lambda i: sl.sum(a[i, k], axis=k), name="R")
    return a, r


def threads_reduce(s: sl.Schedule, out: sl.Tensor, threads: int, lanes: int) -> None:
    """`out`'s reduction split over `threads` threads of its row's block: each thread sums
    `lanes` neighbouring columns at a time (``rfactor`` over the thread index, the lanes
    unrolled, which become one 16-byte load), then one collective combines the threads."""
    _, ki = s[out].split(s[out].op.reduce_axis[0], factor=threads * lanes)
    kt, _ = s[out].split(ki, factor=lanes)
    rf = s.rfactor(out, kt)
    s[out].bind(s[out].op.reduce_axis[0], sl.thread_axis("threadIdx.x"))
    s[rf].compute_at(s[out], s[out].op.reduce_axis[0])
    for axis in s[rf].op.reduce_axis:  # all of a thread's loads in flight at once
        s[rf].unroll(axis)


def sum_schedule(r: sl.Tensor, threads: int = THREADS, lanes: int = LANES) -> sl.Schedule:
    s = sl.create_schedule(r.op)
    threads_reduce(s, r, threads, lanes)
    s[r].bind(s[r].op.axis[0], sl.thread_axis("blockIdx.x"))
    return s


def softmax(m, n) -> tuple[sl.Tensor, ...]:
    """``(A, Max, E, Sum, Inv, Out)``; the output multiplies by one reciprocal per row rather
    than dividing each element (a division is a dozen instructions, a multiplication one)."""
    a = sl.placeholder((m, n), name="A")
    k1 = sl.reduce_axis((0, n), name="k1")
    k2 = sl.reduce_axis((0, n), name="k2")
    mx = sl.compute((m,), lambda i: sl.max(a[i, k1], axis=k1), name="Max")
    e = sl.compute((m, n), lambda i, j: sl.exp(a[i, j] - mx[i]), name="E")
    total = sl.compute((m,), lambda i: sl.sum(e[i, k2], axis=k2), name="Sum")
    inv = sl.compute((m,), lambda i: 1.0 / total[i], name="Inv")
    out = sl.compute((m, n), lambda i, j: e[i, j] * inv[i], name="Out")
    return a, mx, e, total, inv, out


def spread(s: sl.Schedule, stage: sl.Tensor, threads: int, lanes: int) -> None:
    """A row-long stage computed by the block: 16 bytes per thread per step, all unrolled."""
    fused = s[stage].fuse(*s[stage].op.axis)
    rest, lane = s[stage].split(fused, factor=lanes)
    steps, tx = s[stage].split(rest, factor=threads)
    s[stage].bind(tx, sl.thread_axis("threadIdx.x"))
    s[stage].vectorize(lane)
    s[stage].unroll(steps)


def softmax_schedule(
    a, mx, e, total, inv, out, threads: int = THREADS, lanes: int = LANES, stage_exp: bool = False
) -> sl.Schedule:
    """One block per row. The row is staged in shared memory once; ``exp(x - max)`` is
    recomputed by the sum and the output, or with `stage_exp` computed once into a second
    shared row (64 KB per block in all, above the 48 KB of static shared memory): on an H100
    both run at the copy bandwidth, the first a little faster."""
    s = sl.create_schedule(out.op)
    row = s.cache_read(a, "shared", [mx, e])
    block = s[out].op.axis[0]
    s[out].bind(block, sl.thread_axis("blockIdx.x"))
    jo, ji = s[out].split(s[out].op.axis[1], factor=threads * lanes)
    tx, lane = s[out].split(ji, factor=lanes)
    s[out].bind(tx, sl.thread_axis("threadIdx.x"))
    s[out].vectorize(lane)  # 16-byte stores
    s[out].unroll(jo)
    for stage in (mx, total):
        # each thread combines its share of the row alone, then one collective
        _, kt = s[stage].split(s[stage].op.reduce_axis[0], factor=threads)
        rf = s.rfactor(stage, kt)
        s[stage].compute_at(s[out], block)
        s[stage].bind(s[stage].op.reduce_axis[0], sl.thread_axis("threadIdx.x"))
        s[rf].compute_at(s[stage], s[stage].op.reduce_axis[0])
        s[rf].unroll(s[rf].op.reduce_axis[0])
    s[inv].compute_at(s[out], block)
    s[row].compute_at(s[out], block)
    spread(s, row, threads, lanes)
    if stage_exp:
        s[e].set_scope("shared")
        s[e].compute_at(s[out], block)
        spread(s, e, threads, lanes)
    else:
        s[e].compute_inline()
    return s
