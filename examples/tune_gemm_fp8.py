"""The 8-bit float GEMM (`examples.gpu_gemm_fp8`: float8_e4m3fn or e5m2 operands, float32
sums, K-major) as a template on Hopper's warpgroup tensor cores: block shape, k step (128 or
256 bytes a row), pipeline depth, the copy engine and block grouping are knobs (768 points).
The template declares invalid the points whose stages (and staged results) would not fit in a
multiprocessor's 227 KB of shared memory; the fastest options `gpu_gemm_fp8.FAST` (128 x 256,
k by 128, 4 stages, TMA loads and stores) are one of the points.

    python -m examples.tune_gemm_fp8 4096      # on a Hopper GPU
"""

from __future__ import annotations

import sys

import schedlang as sl
from examples import gpu_gemm_fp8

SHARED_BYTES = 227 * 1024  # what one block may have on sm_90
STAGED_PIECE = 64 * 128  # a warpgroup's staging buffer for stores by the copy engine


@sl.tune.template
def gemm(cfg, m, n, k, dtype="float8_e4m3fn", out_dtype="bfloat16"):
    a, b, c = gpu_gemm_fp8.gemm(m, n, k, dtype, out_dtype)
    block_rows = cfg.choice("block_rows", [64, 128, 256])
    block_cols = cfg.choice("block_cols", [64, 128, 192, 256])
    step = cfg.choice("step", [128, 256])
    stages = cfg.choice("stages", [2, 3, 4, 5])
    tma = cfg.flag("tma")
    tma_store = cfg.flag("tma_store")
    group = cfg.choice("group", [0, 8])
    cfg.add_flop(2.0 * m * n * k)
    staged = (block_rows + block_cols) * step * stages
    if staged > SHARED_BYTES:
        raise sl.tune.Invalid(f"{stages} stages of {staged // stages} bytes exceed 227 KB")
    if tma_store and staged + block_rows // 64 * STAGED_PIECE > SHARED_BYTES:
        raise sl.tune.Invalid(f"{stages} stages leave no room for the staged results")
    s = gpu_gemm_fp8.schedule(
        a, b, c, step=step, block_rows=block_rows, block_cols=block_cols, stages=stages,
        tma=tma, group=group, tma_store=tma_store,
    )  # fmt: skip
    return s, [a, b, c]


def main(size: int = 4096) -> None:
    log = sl.tune.run(gemm(size, size, size), target="cuda", search="grid")
    best = log.best()
    print(log)
    print(f"best: {best.knobs}: {2.0 * size**3 / best.seconds / 1e12:.0f} TFLOP/s")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
