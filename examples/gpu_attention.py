"""Attention written as its definition and fused by ``online`` into one pass over blocks of keys.

Over (batch * heads, seqlen, head dim), fp16 or bf16 inputs, fp32 accumulation::

    S = Q K^T * scale;  M = max_j S;  P = exp(S - M);  Z = sum_j P;  O = sum_j P V / Z

``s.online([M, Z, O], factor)`` turns the three reductions over the keys into one scan over
blocks of ``factor`` keys with a running maximum, sum and output, rescaled as the maximum grows
(FlashAttention's algorithm). Three schedules of it: `schedule` binds every stage to blocks and
threads of its own kernel (the scan's steps launched by the host, the states in global memory);
`fused_schedule` runs it in one kernel, a thread per query row; `wgmma_schedule` is
FlashAttention's kernel on Hopper's tensor cores (the states in registers, the probabilities a
register operand, K and V by the copy engine, a producer warpgroup handing its registers to
two consumer warpgroups, a step's second products beside the next step's softmax). A causal
mask is the triangular domain ``j <= i`` of every reduction.
"""

from __future__ import annotations

import math

import schedlang as sl
from examples.gpu_gemm_wgmma import stage_tile, take_tiles_in_turn
from schedlang.ir.tensor import ComputeOp


def attention(bh: int, n, d: int, dtype: str = "float16", causal: bool = False):
    """``(Q, K, V, (M, Z, O), Out)``: the definition, nothing fused yet."""
    scale = d**-0.5
    q, k, v = (sl.placeholder((bh, n, d), dtype, name=name) for name in "QKV")
    e = sl.reduce_axis((0, d), name="e")
    s_ = sl.compute(
        (bh, n, n),
        lambda b, i, j: sl.sum(
            q[b, i, e].astype("float32") * k[b, j, e].astype("float32") * scale, axis=e
        ),
        name="S",
    )

    def kept(i, j):
        return j <= i if causal else None

    j = sl.reduce_axis((0, n), name="j")
    m = sl.compute((bh, n), lambda b, i: sl.max(s_[b, i, j], axis=j, where=kept(i, j)), name="M")
    p = sl.compute((bh, n, n), lambda b, i, j: sl.exp(s_[b, i, j] - m[b, i]), name="P")
    jz = sl.reduce_axis((0, n), name="jz")
    z = sl.compute((bh, n), lambda b, i: sl.sum(p[b, i, jz], axis=jz, where=kept(i, jz)), name="Z")
    jo = sl.reduce_axis((0, n), name="jo")
    o = sl.compute(
        (bh, n, d),
        lambda b, i, c: sl.sum(
            p[b, i, jo] * v[b, jo, c].astype("float32"), axis=jo, where=kept(i, jo)
        ),
        name="O",
    )
    out = sl.compute((bh, n, d), lambda b, i, c: (o[b, i, c] / z[b, i]).astype(dtype), name="Out")
    return q, k, v, (m, z, o), out


def schedule(q, k, v, chain, out, factor: int = 64, threads: int = 128) -> sl.Schedule:
    """The chain fused by online, each stage's elements spread over blocks of `threads`; the
    scan's steps stay a serial loop (each reads the one before), launched by the host."""
    s = sl.create_schedule(out)
    s.online(list(chain), factor=factor)
    spread_stages(s, threads)
    return s


def fused_schedule(
    q, k, v, chain, out, factor: int = 32, rows: int = 64, unroll: bool = True
) -> sl.Schedule:
    """One kernel: a block per `rows` query rows, a thread per row holding its running
    maximum, sum and output (`"local"`), every block of `factor` keys brought into shared
    memory once for all the block's rows. The online scan is computed inside each thread's
    loop (`compute_at` of the scan), so the scores of a block of keys live in the thread's
    registers, never in memory: FlashAttention's dataflow on the CUDA cores."""
    s = sl.create_schedule(out)
    m_run, _, _ = s.online(list(chain), factor=factor)
    for copy in chain[1:]:  # O and Z read the last step of their states
        s[copy].compute_inline()
    b, i, c = s[out].op.axis
    io, ii = s[out].split(i, factor=rows)
    s[out].reorder(b, io, ii, c)
    tx = sl.thread_axis("threadIdx.x")
    s[out].bind(b, sl.thread_axis("blockIdx.y"))
    s[out].bind(io, sl.thread_axis("blockIdx.x"))
    s[out].bind(ii, tx)
    s[m_run].compute_at(s[out], ii)  # the states of one row, in the row's thread
    stages = {stage.name: stage for stage in s.stages}
    update = stages["M.online.M_update"]
    step = update.op.axis[0]
    scores, block_max = stages["S"], stages["M.online.block_max"]
    s[scores].compute_at(s[update], step)  # one block's scores, read by every later stage
    s[block_max].compute_at(s[update], step)
    s[s.cache_read(q, "local", [scores])].compute_at(s[out], ii)  # the row's query
    weighted = stages["M.online.O_block"]
    for source, reader, at in ((k, scores, update), (v, weighted, weighted)):
        tile = s.cache_read(source, "shared", [reader])
        s[tile].compute_at(s[at], at.op.axis[0])
        _, lanes = s[tile].split(s[tile].fuse(*s[tile].op.axis), factor=rows)
        s[tile].bind(lanes, tx)
    # Keys outside, head dim inside: a score's exp is computed once for the whole row of V.
    keys, dims = weighted.op.reduce_axis[0], weighted.op.axis[-1]
    s[weighted].reorder(keys, dims)
    if unroll:  # the block's scores in registers: every index into them a constant
        s[weighted].unroll(dims)
        s[scores].reorder(scores.op.reduce_axis[0], scores.op.axis[-1])  # a query element
        s[scores].unroll(scores.op.axis[-1])  # read once for the block's keys
        for stage in (block_max, stages["M.online.Z_block"], weighted):
            s[stage].unroll(stage.op.reduce_axis[0])
    return s


def tensor_core_attention(bh: int, n, d: int, dtype: str = "float16", causal: bool = False):
    """``(Q, K, V, (M, Z, O), P16, Out)``: the definition as the tensor cores compute it. The
    scores are the plain products (their scale applied in the exponent, ``exp(S * scale + M *
    -scale)``, the same softmax: one fused multiply-add an exponent, ``M * -scale`` once a
    row), and the probabilities are rounded to `dtype` as the second product's
    operand, as FlashAttention rounds them; the sum ``Z`` takes them unrounded. The
    exponentials are ``fast_exp2`` with ``log2(e)`` folded into the scale, FlashAttention's (one
    approximate instruction each instead of an exp correct to the last bit: their error, below
    2**-22, is far below the probabilities' rounding to 16 bits). The output is normalised as
    FlashAttention normalises it, by the reciprocal of ``Z`` (one division a row, then a
    multiplication an element: 64 correctly rounded divisions a thread at d = 128, each a
    dozen instructions and a branch, cost a tile's epilogue 3% of a short causal tile's time;
    the product differs from the quotient by at most an ulp of float32, far below the output's
    rounding to 16 bits)."""
    scale = d**-0.5 * math.log2(math.e)
    q, k, v = (sl.placeholder((bh, n, d), dtype, name=name) for name in "QKV")
    e = sl.reduce_axis((0, d), name="e")
    s_ = sl.compute(
        (bh, n, n),
        lambda b, i, j: sl.sum(q[b, i, e].astype("float32") * k[b, j, e].astype("float32"), axis=e),
        name="S",
    )

    def kept(i, j):
        return j <= i if causal else None

    j = sl.reduce_axis((0, n), name="j")
    m = sl.compute((bh, n), lambda b, i: sl.max(s_[b, i, j], axis=j, where=kept(i, j)), name="M")
    p = sl.compute(
        (bh, n, n), lambda b, i, j: sl.fast_exp2(s_[b, i, j] * scale + m[b, i] * -scale), name="P"
    )
    p16 = sl.compute((bh, n, n), lambda b, i, j: p[b, i, j].astype(dtype), name="P16")
    jz = sl.reduce_axis((0, n), name="jz")
    z = sl.compute((bh, n), lambda b, i: sl.sum(p[b, i, jz], axis=jz, where=kept(i, jz)), name="Z")
    jo = sl.reduce_axis((0, n), name="jo")
    o = sl.compute(
        (bh, n, d),
        lambda b, i, c: sl.sum(
            p16[b, i, jo].astype("float32") * v[b, jo, c].astype("float32"),
            axis=jo,
            where=kept(i, jo),
        ),
        name="O",
    )
    out = sl.compute(
        (bh, n, d), lambda b, i, c: (o[b, i, c] * (1.0 / z[b, i])).astype(dtype), name="Out"
    )
    return q, k, v, (m, z, o), p16, out


def wgmma_schedule(
    q,
    k,
    v,
    chain,
    p16,
    out,
    rows: int = 128,
    keys: int = 64,
    stages: int = 2,
    tma: bool = False,
    persistent: int = 0,
    overlap: bool = False,
    warp_specialize: bool = False,
    turns: bool = False,
    threshold: float | None = None,
    store_tma: bool = False,
) -> sl.Schedule:
    """One kernel on Hopper's tensor cores: a block per `rows` query rows, a warpgroup per 64 of
    them, the online scan computed inside the warpgroup's loop over blocks of `keys` keys.
    Per step: the scores ``Q K^T`` by wgmma (Q staged once, K per block), the block's maximum
    and sum across the accumulator's lanes (each thread its columns, then its quad), the
    probabilities rounded in registers and used there as the A operand of ``P V`` (V per
    block), the running output rescaled in registers; at the end ``O * (1 / Z)`` stored by
    ``store_matrix``. K's and V's blocks are copied `stages` - 1 steps ahead (``pipeline``);
    with `tma` by the copy engine, by default issued by the block's first thread between its
    own work (``warp_specialize=False``: no producer warpgroup, no block barrier holding the
    two warpgroups in step, one warpgroup's softmax beside the other's products).
    Under a causal mask a block of rows steps up to its diagonal only, and the steps below the
    diagonal blocks run without the mask's compares (docs/primitives/online.md). With
    `persistent`, that many blocks take the (head, rows) tiles in turn, block b tiles b,
    b + persistent, ...; with `tma` the copy engine then fills the next tile's first stages
    while this tile's last steps run (under a causal mask, the steps counted per tile in a
    register, as the tiles step to different diagonals). With `overlap` (and `tma`) a step's
    second product moves into the next step, issued after that step's scores, and runs while
    the warpgroup computes that step's softmax (``pragma(step, "overlap_products")``,
    FlashAttention 3's intra-warpgroup overlap). With `warp_specialize` (and `tma`) a producer
    warpgroup of its own issues the copies and hands its registers to the two consumer
    warpgroups (240 a thread: `gpu.register_handover`), FlashAttention 3's roles; with
    `turns` (and `warp_specialize`) the two consumers take turns at the tensor cores, one's
    products beside the other's softmax (``pragma(step, "take_turns")``, FlashAttention 3's
    pingpong). With `threshold`, the sums are taken against a reference maximum that
    follows the running one only once it has grown past it by `threshold` in the exponent
    (``online(..., threshold=)``, FlashAttention 4's lazy rescale), and the output's rescale
    is skipped where its factors are all 1 (``pragma(step, "skip_unit_scales")``). With
    `store_tma`, the copy engine stores the output (``store_matrix(tma=True)``), staged in
    K's shared tiles once the last step's scores have read them (`loopir.memory.shared_reuse`:
    Q's tile and K's and V's three stages leave no other room at d = 128). The
    keys' length must be a multiple of `keys` (whole tiles along the second
    product's reduction), and with `persistent` a multiple of `rows` (over a length that
    leaves a part tile, the placement refuses the block's footprints: their divisions
    multiply)."""
    if warp_specialize and not tma:
        raise ValueError(
            "warp_specialize=True gives the copy engine's copies a producer warpgroup: "
            "pass tma=True with it"
        )
    if turns and not warp_specialize:
        raise ValueError(
            "turns=True has the consumers of a producer warpgroup take turns: pass "
            "warp_specialize=True (and tma=True) with it"
        )
    d = int(q.shape[-1])
    s = sl.create_schedule(out.op)
    m_run, _, _ = s.online(list(chain), factor=keys, keep=[p16], threshold=threshold)
    for copy in chain[1:]:  # O and Z read the last step of their states
        s[copy].compute_inline()
    held = s.cache_write(out, "wgmma.accumulator")  # O * (1 / Z), in the output's layout
    b, i, c = out.op.axis
    io, ii = s[out].split(i, factor=rows)
    group, ii = s[out].split(ii, factor=64)
    s[out].reorder(b, io, group, ii, c)
    if persistent:
        take_tiles_in_turn(s, out, [b, io], [group, ii, c], persistent)
    else:
        s[out].bind(b, sl.thread_axis("blockIdx.y"))
        s[out].bind(io, sl.thread_axis("blockIdx.x"))
    s[out].bind(group, sl.thread_axis("threadIdx.z"))
    s[out].tensorize(ii, sl.intrin.store_matrix(n=d, m=64, tma=store_tma))
    s[held].compute_at(s[out], group)
    s[m_run].compute_at(s[out], group)  # the states of the warpgroup's 64 rows
    s[m_run].set_scope("wgmma.accumulator")
    named = {stage.name: stage for stage in s.stages}
    update = named["M.online.M_update"]
    step = update.op.axis[0]
    scores, weighted = named["S"], named["M.online.O_block"]
    for stage in (scores, named["M.online.block_max"]):
        s[stage].compute_at(s[update], step)
    for name in ("S", "M.online.block_max", "M.online.Z_block", "M.online.P16_block"):
        s[named[name]].set_scope("wgmma.accumulator")
    s[weighted].set_scope("wgmma.accumulator")
    for product, n in ((scores, keys), (weighted, d)):
        ko, ki = s[product].split(product.op.reduce_axis[0], factor=16)
        s[product].reorder(ko, *product.op.axis[-2:], ki)
        s[product].tensorize(product.op.axis[-2], sl.intrin.wgmma(n=n))
    groups = rows // 64
    stage_tile(s, s.cache_read(q, "shared", [scores]), s[out], group, groups, 1)
    alone = {"tma": True, "warp_specialize": warp_specialize} if tma else {}
    stage_tile(s, s.cache_read(k, "shared", [scores]), s[update], step, groups, stages, **alone)
    v_tile = s.cache_read(v, "shared", [weighted])
    stage_tile(s, v_tile, s[update], step, groups, stages, **alone)  # beside K: one pipeline
    if overlap:
        s[update].pragma(step, "overlap_products")
    if turns:
        s[update].pragma(step, "take_turns")
    if threshold is not None:
        s[update].pragma(step, "skip_unit_scales")
    return s


def spread_stages(s: sl.Schedule, threads: int, keep: tuple[sl.Tensor, ...] = ()) -> None:
    """Each computed stage of `s` but those of `keep`, its elements fused and spread over
    blocks of `threads`; the step axis of an online scan's stages stays a serial loop."""
    bx, tx = sl.thread_axis("blockIdx.x"), sl.thread_axis("threadIdx.x")
    kept = [s[t] for t in keep]
    for stage in s.stages:
        if not isinstance(stage.op, ComputeOp) or any(stage is k for k in kept):
            continue  # the inputs, and the scan (no loops)
        axes = stage.op.axis
        if axes[0].var.name.endswith(".step"):
            axes = axes[1:]
        fused = s[stage].fuse(*axes)
        outer, inner = s[stage].split(fused, factor=threads)
        s[stage].bind(outer, bx)
        s[stage].bind(inner, tx)
