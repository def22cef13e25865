"""A float32 GEMM for the GPU written with TE's primitives, tuned for Hopper-class GPUs.

``C[i, j] = sum_k At[k, i] * B[k, j]`` (with leading batch axes, one product per batch:
`examples.gpu_winograd`): the layout of TE's GPU tutorial, where the first
operand is stored k-major, so that a column of a block's A tile, like a row of its B tile, is
contiguous in shared memory and a thread reads its operands 16 bytes at a time (cuBLAS runs
the same product from either layout at the same speed).

The schedule, from the outside in:
- blocks of 128x128 outputs (``blockIdx``), 16x16 threads, each thread 2x2 virtual threads of
  4x4 outputs: neighbouring threads own neighbouring 4-wide column strips, so a warp's shared
  reads are contiguous, and each thread holds 64 accumulators in registers (``cache_write``
  local);
- k in steps of 8: each step stages an 8x128 tile of At and of B in shared memory
  (``cache_read`` shared, ``compute_at`` the step), every thread moving 4 floats with one
  16-byte load (``vectorize``), double buffered so one barrier per step suffices (16 KB):
  the next step's tile is loaded into registers before the current one is used and stored
  after;
- inside a step, for each of the 8 values of k, a thread copies its 8 values of A and 8 of B
  into registers (``cache_read`` local) and does 64 multiply-adds (all unrolled).
"""

from __future__ import annotations

import numpy as np

import schedlang as sl

BLOCK = 128  # outputs per block along each side
THREADS = 16  # threads per block along each side
VTHREADS = 2  # virtual threads per thread along each side
STEP = 8  # k per shared-memory stage


def gemm(m, n, k) -> tuple[sl.Tensor, sl.Tensor, sl.Tensor]:
    """``(At, B, C)`` with At of shape (k, m): C = At^T @ B."""
    at = sl.placeholder((k, m), name="At")
    b = sl.placeholder((k, n), name="B")
    r = sl.reduce_axis((0, k), name="k")
    c = sl.compute((m, n), lambda i, j: sl.sum(at[r, i] * b[r, j], axis=r), name="C")
    return at, b, c


def schedule(at: sl.Tensor, b: sl.Tensor, c: sl.Tensor, **options) -> sl.Schedule:
    """The schedule of `c` alone; `options` as `schedule_into`'s."""
    s = sl.create_schedule(c.op)
    schedule_into(s, at, b, c, **options)
    return s


def schedule_into(
    s: sl.Schedule,
    at: sl.Tensor,
    b: sl.Tensor,
    c: sl.Tensor,
    block=BLOCK,
    threads=THREADS,
    vthreads=VTHREADS,
    step=STEP,
    double_buffer: bool = True,
    group: int = 0,
) -> None:
    """The schedule above applied to stage `c` of `s` (a product inside a larger pipeline)."""
    aa = s.cache_read(at, "shared", [c])
    bb = s.cache_read(b, "shared", [c])
    al = s.cache_read(aa, "local", [c])
    bl = s.cache_read(bb, "local", [c])
    cc = s.cache_write(c, "local")

    *batch, rows, cols = c.op.axis
    by, yi = s[c].split(rows, factor=block)
    bx, xi = s[c].split(cols, factor=block)
    vy, yi = s[c].split(yi, nparts=vthreads)
    ty, yi = s[c].split(yi, nparts=threads)
    vx, xi = s[c].split(xi, nparts=vthreads)
    tx, xi = s[c].split(xi, nparts=threads)
    s[c].reorder(by, bx, vy, vx, ty, tx, yi, xi)
    if group:
        # blocks launched in order of blockIdx.x walk down `group` block columns at a time
        gx, bx = s[c].split(bx, factor=group_size(cols, block, group))
        s[c].reorder(gx, by, bx, vy, vx, ty, tx, yi, xi)
        by = s[c].fuse(by, bx)
        by, bx = gx, by
    if batch:  # a batch of products (leading axes of C), one per blockIdx.z
        bz = s[c].fuse(*batch) if len(batch) > 1 else batch[0]
        s[c].reorder(bz, by, bx)
        s[c].bind(bz, sl.thread_axis("blockIdx.z"))
    for axis, tag in (
        (by, "blockIdx.y"),
        (bx, "blockIdx.x"),
        (vy, "vthread"),
        (vx, "vthread"),
        (ty, "threadIdx.y"),
        (tx, "threadIdx.x"),
    ):
        s[c].bind(axis, sl.thread_axis(tag))
    s[c].vectorize(xi)

    s[cc].compute_at(s[c], tx)
    ko, ki = s[cc].split(s[cc].op.reduce_axis[0], factor=step)
    s[cc].reorder(ko, ki, *s[cc].op.axis)
    s[cc].unroll(ki)
    for cache in (aa, bb):
        s[cache].compute_at(s[cc], ko)
        fused = s[cache].fuse(*s[cache].op.axis)
        rest, lanes = s[cache].split(fused, factor=4)
        fy, fx = s[cache].split(rest, factor=threads)
        _, fy = s[cache].split(fy, factor=threads)
        s[cache].bind(fy, sl.thread_axis("threadIdx.y"))
        s[cache].bind(fx, sl.thread_axis("threadIdx.x"))
        s[cache].vectorize(lanes)
        if double_buffer:
            s[cache].double_buffer()
    for cache in (al, bl):
        s[cache].compute_at(s[cc], ki)


def group_size(cols, block: int, group: int) -> int:
    """The largest number of block columns, at most `group`, that divides their count: a
    ragged last group would make the grid's extent depend on the group (not allowed)."""
    try:
        columns = -(-int(cols.dom.extent) // block)
    except TypeError:
        raise ValueError("group= needs a constant number of columns (a symbolic n)") from None
    return max(g for g in range(1, group + 1) if columns % g == 0)


def build(m, n, k, target: str = "cuda -min-blocks-per-sm=2", **options):
    """The GEMM built for `target`. Two blocks per multiprocessor (16 warps) hide the
    latency of shared memory; ptxas may otherwise give each thread more than 128 registers
    (64 accumulators, 16 operands, the next tile's values in flight) and fit only one."""
    at, b, c = gemm(m, n, k)
    return sl.build(schedule(at, b, c, **options), [at, b, c], target=target)


def tuned(m, n, k, steps=(8, 16), target: str = "cuda -min-blocks-per-sm=2", repeat: int = 10):
    """``(kernel, step)``: the GEMM with the k step that runs fastest on this GPU, each candidate
    built and timed on random data, as Triton's autotuner chooses among configurations. Which
    step wins depends on the size: 8 at 4096^3 (fewer registers), 16 at 4000^3 (half the
    barriers and tile loads per multiply-add), on an H100."""
    rng = np.random.default_rng(0)
    at = sl.array(rng.standard_normal((k, m), dtype=np.float32))
    b = sl.array(rng.standard_normal((k, n), dtype=np.float32))
    c = sl.empty((m, n))
    timed = []
    for step in steps:
        kernel = build(m, n, k, target=target, step=step)
        timed.append((kernel.time(at, b, c, repeat=repeat), step, kernel))
    _, step, kernel = min(timed, key=lambda entry: entry[0])
    return kernel, step
