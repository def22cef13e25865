"""A float16/bfloat16 GEMM on the tensor cores, written with TE's primitives and ``tensorize``.

``C[i, j] = sum_k float32(A[i, k]) * float32(B[k, j])``: half-precision data, float32
accumulation, as TE writes mixed precision (and as cuBLAS's default fp16 GEMM computes).

The schedule, from the outside in (TE's opt_conv_tensorcore recipe, for a GEMM):
- blocks of ``block_rows x block_cols`` outputs (``blockIdx``), split between warps
  (``threadIdx.z`` x ``threadIdx.y``) of ``warp_rows x warp_cols`` outputs each;
- each warp accumulates its outputs in 16 x 16 tensor-core fragments
  (``cache_write(C, "wmma.accumulator")``, ``tensorize`` with ``mma_sync``);
- k in steps of `step`: each step stages a tile of A and of B in shared memory
  (``cache_read`` shared, ``compute_at`` the step), every thread copying 8 halves (16 bytes)
  at a time, the rows swizzled (``swizzle``) or padded (``storage_align``) so that the
  tensor cores' 8-row loads (``ldmatrix``) meet no bank conflict; the copies are asynchronous
  (``cp.async``), `stages` - 1 steps ahead of their use (``pipeline``), or double buffered
  through registers;
- for each 16-wide slice of the step, each warp loads its A and B fragments from shared
  memory (``cache_read`` into ``wmma.matrix_a``/``wmma.matrix_b``, ``tensorize`` with
  ``load_matrix``) and runs its mma tiles; at the end each warp stores its accumulators
  (``tensorize`` of C's copy with ``store_matrix``).

The lanes of a warp are ``threadIdx.x`` (32): the shared copies bind it, the tensor-core stages
run on all of it together.
"""

from __future__ import annotations

import schedlang as sl

TILE = 16  # the tensor cores' tile: 16 x 16 x 16 per mma_sync


def gemm(
    m, n, k, dtype: str = "float16", out_dtype: str = "float32"
) -> tuple[sl.Tensor, sl.Tensor, sl.Tensor]:
    """``(A, B, C)``: C (m x n) = A (m x k) @ B (k x n), accumulated in float32 and stored
    as `out_dtype` (torch.matmul of half-precision tensors stores their dtype)."""
    a = sl.placeholder((m, k), dtype, name="A")
    b = sl.placeholder((k, n), dtype, name="B")
    r = sl.reduce_axis((0, k), name="k")
    acc = sl.compute(
        (m, n),
        lambda i, j: sl.sum(a[i, r].astype("float32") * b[r, j].astype("float32"), axis=r),
        name="C" if out_dtype == "float32" else "acc",
    )
    if out_dtype == "float32":
        return a, b, acc
    return a, b, sl.compute((m, n), lambda i, j: acc[i, j].astype(out_dtype), name="C")


def schedule(
    a: sl.Tensor,
    b: sl.Tensor,
    c: sl.Tensor,
    block_rows: int = 128,
    block_cols: int = 128,
    warp_rows: int = 64,
    warp_cols: int = 32,
    step: int = 64,
    stages: int = 3,
    double_buffer: bool = False,
    layout: str = "swizzle",
    tf32: bool = False,
) -> sl.Schedule:
    """The schedule above; every size a multiple of 16, the block's a multiple of the warp's.
    With `tf32`, float32 data runs on the tensor cores as TF32 (a 10-bit mantissa; tiles of
    16 x 16 x 8): asked for explicitly, never a silent change of precision."""
    k_tile = 8 if tf32 else TILE
    vector = 16 // (4 if a.dtype == "float32" else 2)  # elements a thread copies at once
    s = sl.create_schedule(c.op)
    product = c.op.input_tensors[0] if c.op.input_tensors[0].op is not a.op else c
    a_shared = s.cache_read(a, "shared", [product])
    b_shared = s.cache_read(b, "shared", [product])
    a_frag = s.cache_read(a_shared, "wmma.matrix_a", [product])
    b_frag = s.cache_read(b_shared, "wmma.matrix_b", [product])
    if product is c:  # C is the sum itself: accumulate in a fragment copy of it
        acc = s.cache_write(c, "wmma.accumulator")
    else:  # C converts the sum: the sum's stage is the accumulator
        acc = product
        s[acc].set_scope("wmma.accumulator")
    warps_y, warps_x = block_rows // warp_rows, block_cols // warp_cols

    i, j = c.op.axis
    bi, i = s[c].split(i, factor=block_rows)
    bj, j = s[c].split(j, factor=block_cols)
    wi, i = s[c].split(i, factor=warp_rows)
    wj, j = s[c].split(j, factor=warp_cols)
    ti, i = s[c].split(i, factor=TILE)
    tj, j = s[c].split(j, factor=TILE)
    s[c].reorder(bi, bj, wi, wj, ti, tj, i, j)
    s[c].bind(bi, sl.thread_axis("blockIdx.y"))
    s[c].bind(bj, sl.thread_axis("blockIdx.x"))
    s[c].bind(wi, sl.thread_axis("threadIdx.z"))
    s[c].bind(wj, sl.thread_axis("threadIdx.y"))
    s[c].tensorize(i, sl.intrin.store_matrix())

    s[acc].compute_at(s[c], wj)
    fi, fj = s[acc].op.axis
    fio, fi = s[acc].split(fi, factor=TILE)
    fjo, fj = s[acc].split(fj, factor=TILE)
    ko, ki = s[acc].split(s[acc].op.reduce_axis[0], factor=step)
    kio, ki = s[acc].split(ki, factor=k_tile)
    s[acc].reorder(ko, kio, fio, fjo, fi, fj, ki)
    s[acc].tensorize(fi, sl.intrin.mma_sync(tf32=tf32))

    for frag, scope in ((a_frag, "wmma.matrix_a"), (b_frag, "wmma.matrix_b")):
        s[frag].compute_at(s[acc], kio)
        rows, cols = s[frag].op.axis
        outer, cols = s[frag].split(cols, factor=k_tile if scope == "wmma.matrix_a" else TILE)
        s[frag].reorder(outer, rows, cols)
        if scope == "wmma.matrix_a":  # A's fragments run down its rows
            outer, rows = s[frag].split(rows, factor=TILE)
        s[frag].tensorize(rows, sl.intrin.load_matrix(scope, tf32=tf32))

    for staged in (a_shared, b_shared):
        s[staged].compute_at(s[acc], ko)
        rows, cols = s[staged].op.axis
        # the 8 rows an ldmatrix reads must land in 8 different groups of 4 banks: rows
        # padded by 8 halves (a stride of 8 more than a multiple of 32), or swizzled
        if layout == "swizzle":
            s[staged].swizzle(128)
        else:
            s[staged].storage_align(rows, 32, 8)
        fused = s[staged].fuse(rows, cols)
        rest, lanes = s[staged].split(fused, factor=vector)
        rest, tx = s[staged].split(rest, factor=32)
        rest, ty = s[staged].split(rest, factor=warps_x)
        _, tz = s[staged].split(rest, factor=warps_y)
        s[staged].bind(tx, sl.thread_axis("threadIdx.x"))
        s[staged].bind(ty, sl.thread_axis("threadIdx.y"))
        s[staged].bind(tz, sl.thread_axis("threadIdx.z"))
        s[staged].vectorize(lanes)
        if stages >= 2:
            s[staged].pipeline(stages)
        elif double_buffer:
            s[staged].double_buffer()
    return s


def build(
    m, n, k, dtype: str = "float16", out_dtype: str = "float32", target: str = "cuda", **options
):
    """The GEMM built for `target` (a CUDA target: tensor cores)."""
    a, b, c = gemm(m, n, k, dtype, out_dtype)
    return sl.build(schedule(a, b, c, **options), [a, b, c], target=target)
