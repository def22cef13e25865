"""Triton's fp32 matmul, shaped as its tutorial's (128x128 tiles, k by 32, 8 warps, 3 stages):
the peer of schedlang's GEMM for compile latency in `gpu.py`.

Each `compile_seconds` call builds a new `triton.jit` function over a new, empty cache
directory, so that neither Triton's in-memory nor its disk cache helps, as a new size does
for schedlang."""

from __future__ import annotations

import os
import tempfile
import time

import torch
import triton
import triton.language as tl


def _matmul(
    a,
    b,
    c,
    m,
    n,
    k,
    sam,
    sak,
    sbk,
    sbn,
    scm,
    scn,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    pa = a + rm[:, None] * sam + rk[None, :] * sak
    pb = b + rk[:, None] * sbk + rn[None, :] * sbn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for step in range(0, tl.cdiv(k, BK)):
        left = k - step * BK
        x = tl.load(pa, mask=(rm[:, None] < m) & (rk[None, :] < left), other=0.0)
        y = tl.load(pb, mask=(rk[:, None] < left) & (rn[None, :] < n), other=0.0)
        acc = tl.dot(x, y, acc, input_precision="ieee")  # fp32, TF32 off
        pa += BK * sak
        pb += BK * sbk
    tl.store(
        c + rm[:, None] * scm + rn[None, :] * scn, acc, mask=(rm[:, None] < m) & (rn[None, :] < n)
    )


def compile_seconds(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> float:
    """Seconds from a new `triton.jit` function to its first launch done (``c = a @ b``)."""
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="triton-cold-")
    kernel = triton.jit(_matmul)
    (m, k), n = a.shape, b.shape[1]
    grid = (triton.cdiv(m, 128), triton.cdiv(n, 128))
    start = time.perf_counter()
    kernel[grid](
        a, b, c, m, n, k, *a.stride(), *b.stride(), *c.stride(),
        BM=128, BN=128, BK=32, num_warps=8, num_stages=3,
    )  # fmt: skip
    torch.cuda.synchronize()
    return time.perf_counter() - start
