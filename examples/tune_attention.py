"""Attention on Hopper's tensor cores (`examples.gpu_attention.wgmma_schedule`) as a template:
query rows a block (one to three warpgroups), keys a step, copies of K and V in flight,
whether the copy engine brings them, issued by the block's first thread or by a producer
warpgroup that hands its registers to the consumers (``producer``), whether a step's second
products run beside the next step's softmax (``overlap``, with the copy engine), whether the
producer's consumers take turns at the tensor cores (``turns``), whether a block per
multiprocessor takes the tiles in turn (persistent blocks), and whether the sums are taken
against a lagging reference maximum with the rescale skipped where it is by 1 (``lazy``:
``online(..., threshold=8)``) are knobs (1152 points). The
template declares invalid the points whose tiles would not fit in a multiprocessor's 227 KB
of shared memory, whose block of keys (or, on persistent blocks, of rows) does not divide the
length, that overlap or have a producer without the copy engine, or take turns without a
producer; points whose accumulators would not fit in a thread's registers are refused when
built (schedlang's estimate), and so left out by the tuner. The hand schedule's options (128
rows, 64 keys, 2 stages, a block a tile) are one of the points.

    python -m examples.tune_attention 4096 128 [causal]     # length, head dim; on a Hopper GPU
"""

from __future__ import annotations

import sys

import schedlang as sl
from examples import gpu_attention

SHARED_BYTES = 227 * 1024  # what one block may have on sm_90
TOKENS, HIDDEN = 16384, 2048  # FlashAttention 3's shapes: batch x length, heads x head dim


@sl.tune.template
def attention(cfg, bh, n, d, dtype="float16", causal=False, multiprocessors=132):
    """`multiprocessors`: the persistent blocks' number (an H100's or H200's 132 by
    default; `main` reads the GPU's)."""
    tensors = gpu_attention.tensor_core_attention(bh, n, d, dtype, causal)
    rows = cfg.choice("rows", [64, 128, 192])
    keys = cfg.choice("keys", [64, 128])
    stages = cfg.choice("stages", [1, 2, 3])
    tma = cfg.choice("tma", [False, True])
    persistent = cfg.choice("persistent", [False, True])
    overlap = cfg.choice("overlap", [False, True])
    producer = cfg.choice("producer", [False, True])
    turns = cfg.choice("turns", [False, True])
    lazy = cfg.choice("lazy", [False, True])
    cfg.add_flop(4.0 * bh * n * n * d / (2 if causal else 1))
    if n % keys:
        raise sl.tune.Invalid(f"{keys} keys a step do not divide the length {n}")
    if persistent and n % rows:
        raise sl.tune.Invalid(f"persistent blocks take whole tiles: {rows} rows do not divide {n}")
    staged = (rows + 2 * keys * stages) * d * 2
    if staged > SHARED_BYTES:
        raise sl.tune.Invalid(f"Q's and {stages} stages of K's and V's tiles exceed 227 KB")
    if tma and stages < 2:
        raise sl.tune.Invalid("the copy engine fills a pipeline: 2 stages or more")
    if overlap and not tma:
        raise sl.tune.Invalid("the second products move into the next step with the copy engine")
    if producer and not tma:
        raise sl.tune.Invalid("a producer warpgroup issues the copy engine's copies")
    if turns and not producer:
        raise sl.tune.Invalid("the consumers of a producer warpgroup take turns")
    blocks = multiprocessors if persistent else 0
    s = gpu_attention.wgmma_schedule(
        *tensors,
        rows=rows,
        keys=keys,
        stages=stages,
        tma=tma,
        persistent=blocks,
        overlap=overlap,
        warp_specialize=producer,
        turns=turns,
        threshold=8.0 if lazy else None,
    )
    return s, [*tensors[:3], tensors[-1]]


def main(n: int = 4096, d: int = 128, causal: str = "") -> None:
    bh = max(1, TOKENS // n) * (HIDDEN // d)  # batch x heads of FlashAttention 3's shapes
    from schedlang.runtime.cuda.peaks import device_peaks

    masked = causal == "causal"
    task = attention(bh, n, d, "float16", masked, device_peaks().multiprocessors)
    log = sl.tune.run(task, target="cuda", search="grid")
    best = log.best()
    print(log)
    flop = 4.0 * bh * n * n * d / (2 if masked else 1)
    print(f"best: {best.knobs}: {flop / best.seconds / 1e12:.0f} TFLOP/s")


if __name__ == "__main__":
    main(*(a if not a.isdigit() else int(a) for a in sys.argv[1:]))
