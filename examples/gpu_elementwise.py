"""Vector add on the GPU: ``C[i] = A[i] + B[i]``, bandwidth-bound.

Each thread moves 16 bytes per array with one vector load or store (``vectorize`` over 4
consecutive floats), 256 threads per block, so one block covers 4096 elements and a warp reads
512 contiguous bytes per instruction. The sizes are constants here (each size compiles once);
with a symbolic size the same schedule runs, the last block guarded.
"""

from __future__ import annotations

import schedlang as sl

THREADS = 256
LANES = 4


def vector_add(n) -> tuple[sl.Tensor, sl.Tensor, sl.Tensor]:
    a = sl.placeholder((n,), name="A")
    b = sl.placeholder((n,), name="B")
    c = sl.compute((n,), lambda i: a[i] + b[i], name="C")
    return a, b, c


def schedule(c: sl.Tensor, threads: int = THREADS, lanes: int = LANES) -> sl.Schedule:
    s = sl.create_schedule(c.op)
    block, rest = s[c].split(c.op.axis[0], factor=threads * lanes)
    thread, lane = s[c].split(rest, factor=lanes)
    s[c].bind(block, sl.thread_axis("blockIdx.x"))
    s[c].bind(thread, sl.thread_axis("threadIdx.x"))
    s[c].vectorize(lane)
    return s


def build(n, target: str = "cuda", **options):
    a, b, c = vector_add(n)
    return sl.build(schedule(c, **options), [a, b, c], target=target)
