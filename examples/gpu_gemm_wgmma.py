"""A float16/bfloat16 GEMM on Hopper's warpgroup tensor cores (``wgmma``, sm_90a).

The algorithm is `gpu_gemm_fp16.gemm`'s (half-precision data, float32 sums). The schedule is
shorter than the warp-level one: a warpgroup's instruction reads A and B straight from shared
memory, so there are no fragment stages for them, and one instruction covers a 64 x n x 16
tile, so each warpgroup holds one accumulator tile:

- blocks of ``block_rows x block_cols`` outputs (``blockIdx``), 64 rows per warpgroup
  (``threadIdx.z``); the 4 warps of a group are ``threadIdx.y`` and its lanes ``threadIdx.x``,
  both left unbound by the tensor-core stages, which all 128 threads run together;
- each warpgroup accumulates its 64 x ``block_cols`` outputs in a ``wgmma.accumulator``
  fragment (``cache_write``, ``tensorize`` with ``sl.intrin.wgmma``), k in steps of 16;
- k in steps of `step` (64: A's rows are then the 128 bytes the swizzled layout has):
  each step stages A's and B's tiles in shared memory, 16 bytes a copy, swizzled by 128 bytes
  (``swizzle(128)``, the layout the instruction reads; B's wide rows are kept in 128-byte
  panels), `stages` - 1 steps ahead (``pipeline``);
- by default 128 x 128 blocks (two warpgroups) and 3 stages, so that two blocks share a
  multiprocessor (96 KB of shared memory and 256 threads of about 120 registers each): one
  block's products run while the other waits at its barrier for its copies;
- at the end each warpgroup stores its tile (``store_matrix(n, m=64)``); with `tma_store`, by
  the copy engine through shared memory (``store_matrix(n, m=64, tma=True)``), so that a
  persistent block's next products start at once.
"""

from __future__ import annotations

import schedlang as sl
from examples.gpu_gemm import group_size
from examples.gpu_gemm_fp16 import gemm
from schedlang.ir.dtype import itemsize
from schedlang.ir.expr import Cast, Read, Reduce

__all__ = ["FAST", "build", "gemm", "schedule", "stage_tile"]

GROUP_ROWS = 64  # a warpgroup's accumulator tile: 64 x n
K_TILE = 16
K_BYTES = 32  # the bytes of K one instruction takes: 16 halves, or 32 8-bit floats
# the fastest options measured on the H100 and H200 (benchmarks/NOTES.md): tiles copied by the
# copy engine from a producer warpgroup, 128 x 256 blocks, 4 stages, results stored by the copy
# engine
FAST = dict(tma=True, block_cols=256, stages=4, tma_store=True)


def schedule(
    a: sl.Tensor,
    b: sl.Tensor,
    c: sl.Tensor,
    block_rows: int = 128,
    block_cols: int = 128,
    step: int = 64,
    stages: int = 3,
    tma: bool = False,
    group: int = 0,
    persistent: int = 0,
    tma_store: bool = False,
    warp_specialize: bool = True,
) -> sl.Schedule:
    """The schedule above: `block_rows` a multiple of 64, `block_cols` a multiple of 8 up to
    256 (a multiple of 64 above 64: B's panels), `step` a multiple of 64 (of 128 for 8-bit
    floats, whose instructions take 32 of K, `gpu_gemm_fp8`). With `tma`, the
    tiles are copied by the copy engine from a producer warp (``pipeline(stages, tma=True)``),
    or without `warp_specialize` from the block's first thread between its own products.
    With `group`, blocks are launched down that many block columns at a time (at most; a
    divisor of their number), so that the blocks running at once share B's columns in L2.
    With `persistent`, that many blocks (one per multiprocessor) take the tiles in turn, block
    b tiles b, b + persistent, ... (those running at once adjoin, for L2): with `tma`, the
    producer fills the next tile's first stages while the consumers store the last one's
    results. With `tma_store`, the copy engine stores each warpgroup's
    tile from shared memory, in the background."""
    if group and persistent:
        raise ValueError(
            "group and persistent: persistent blocks already take adjoining tiles at once; "
            "give one of them (the tiles' index through both splits nests divisions too deep for "
            "placement to bound)"
        )
    s = sl.create_schedule(c.op)
    product = _product(a, c)
    a_shared = s.cache_read(a, "shared", [product])
    b_shared = s.cache_read(b, "shared", [product])
    epilogue = None
    if product is c:  # C is the sum itself: accumulate in a fragment copy of it
        acc = s.cache_write(c, "wgmma.accumulator")
    else:  # C converts the sum: the sum's stage is the accumulator
        acc = product
        s[acc].set_scope("wgmma.accumulator")
        if not _converts(c, product):  # C scales it too: each thread its elements, in place
            epilogue = s.cache_write(c, "wgmma.accumulator")
    groups = block_rows // GROUP_ROWS

    ko = warpgroup_tiles(
        s, c, acc, a.dtype, block_rows, block_cols, step, group, persistent, tma_store, epilogue
    )
    for staged in (a_shared, b_shared):
        stage_tile(s, staged, s[acc], ko, groups, stages, tma, warp_specialize=warp_specialize)
    return s


def warpgroup_tiles(
    s: sl.Schedule,
    c: sl.Tensor,
    acc: sl.Tensor,
    dtype: str,
    block_rows: int,
    block_cols: int,
    step: int,
    group: int = 0,
    persistent: int = 0,
    tma_store: bool = False,
    epilogue: sl.Tensor | None = None,
) -> sl.IterVar:
    """C in blocks of `block_rows` x `block_cols` (launched as `schedule` says of `group` and
    `persistent`), a warpgroup per 64 rows storing its tile by ``store_matrix``; the
    accumulator `acc` (and the `epilogue` scaling it) computed at the warpgroup's tile, k in
    steps of `step`, each multiplied by wgmma over 32 bytes of K of `dtype` at a time. The
    loop over the steps, where the operands' tiles are staged."""
    i, j = c.op.axis
    bi, i = s[c].split(i, factor=block_rows)
    bj, j = s[c].split(j, factor=block_cols)
    gi, i = s[c].split(i, factor=GROUP_ROWS)
    s[c].reorder(bi, bj, gi, i, j)
    if group:
        gj, bj = s[c].split(bj, factor=group_size(c.op.axis[1], block_cols, group))
        s[c].reorder(gj, bi, bj, gi, i, j)
        bj = s[c].fuse(bi, bj)
        bi = gj
    if persistent:
        take_tiles_in_turn(s, c, [bi, bj], [gi, i, j], persistent)
    else:
        s[c].bind(bi, sl.thread_axis("blockIdx.y"))
        s[c].bind(bj, sl.thread_axis("blockIdx.x"))
    s[c].bind(gi, sl.thread_axis("threadIdx.z"))
    s[c].tensorize(i, sl.intrin.store_matrix(n=block_cols, m=GROUP_ROWS, tma=tma_store))

    if epilogue is not None:
        s[epilogue].compute_at(s[c], gi)
    s[acc].compute_at(s[c], gi)
    fi, fj = s[acc].op.axis
    ko, ki = s[acc].split(s[acc].op.reduce_axis[0], factor=step)
    k_tile = K_BYTES // itemsize(dtype)
    kio, ki = s[acc].split(ki, factor=k_tile)
    s[acc].reorder(ko, kio, fi, fj, ki)
    s[acc].tensorize(fi, sl.intrin.wgmma(n=block_cols, k=k_tile))
    return ko


def _product(a: sl.Tensor, c: sl.Tensor) -> sl.Tensor:
    """The stage that sums A's products: C, or the sum C reads."""
    for t in c.op.input_tensors:
        if t.op is not a.op and isinstance(getattr(t.op, "expr", None), Reduce):
            return t
    return c


def _converts(c: sl.Tensor, product: sl.Tensor) -> bool:
    """Whether C only converts the sum (what store_matrix does on its way out)."""
    body = c.op.expr
    while isinstance(body, Cast):
        body = body.value
    return isinstance(body, Read) and body.tensor.op is product.op


def take_tiles_in_turn(s: sl.Schedule, stage, tiles: list, rest: list, blocks: int) -> None:
    """`stage`'s tile loops `tiles` fused and shared by `blocks` blocks (``blockIdx.x``), the
    loops `rest` inside: block b takes tiles b, b + blocks, ..., so that the tiles running at
    once adjoin (they share rows and columns in L2)."""
    turn, block = s[stage].split(s[stage].fuse(*tiles), factor=blocks)
    s[stage].reorder(block, turn, *rest)
    s[stage].bind(block, sl.thread_axis("blockIdx.x"))


def stage_tile(
    s: sl.Schedule,
    staged: sl.Tensor,
    consumer: sl.Stage,
    at,
    groups: int,
    stages: int,
    tma: bool = False,
    swizzle: bool = True,
    warp_specialize: bool = True,
) -> None:
    """Stage a tile of `staged` in shared memory at loop `at` of `consumer`, in the layout
    wgmma reads (swizzled by 128 bytes; without `swizzle`, row by row, for the threads
    to read), copied 16 bytes a thread by all the block's threads (lanes in x, a warpgroup's
    warps in y, `groups` warpgroups in z), `stages` - 1 steps ahead where `stages` >= 2. The
    tile is the last two dimensions of the staged box."""
    vector = 16 // itemsize(staged.dtype)  # elements a thread copies at once
    s[staged].compute_at(consumer, at)
    if swizzle:
        s[staged].swizzle(128)
    fused = s[staged].fuse(*s[staged].op.axis[-2:])
    rest, lanes = s[staged].split(fused, factor=vector)
    rest, tx = s[staged].split(rest, factor=32)
    rest, ty = s[staged].split(rest, factor=4)
    _, tz = s[staged].split(rest, factor=groups)
    s[staged].bind(tx, sl.thread_axis("threadIdx.x"))
    s[staged].bind(ty, sl.thread_axis("threadIdx.y"))
    s[staged].bind(tz, sl.thread_axis("threadIdx.z"))
    s[staged].vectorize(lanes)
    if stages >= 2:
        s[staged].pipeline(stages, tma=tma, warp_specialize=warp_specialize)


def build(
    m, n, k, dtype: str = "float16", out_dtype: str = "float32", target: str = "cuda", **options
):
    """The GEMM built for `target` (a Hopper GPU: sm_90a)."""
    a, b, c = gemm(m, n, k, dtype, out_dtype)
    return sl.build(schedule(a, b, c, **options), [a, b, c], target=target)
