"""The 8-bit float GEMM (`examples.gpu_gemm_fp8`: float8_e4m3fn or e5m2 operands, float32
sums, K-major) as a template on Hopper's warpgroup tensor cores: block shape, k step (128 or
256 bytes a row), pipeline depth, the copy engine and block grouping are knobs (768 points).
The knobs and the points declared invalid (their stages, and staged results, past a
multiprocessor's 227 KB of shared memory) are `tune_gemm_fp16`'s; the fastest options
`gpu_gemm_fp8.FAST` (128 x 256, k by 128, 4 stages, TMA loads and stores) are one of them.

    python -m examples.tune_gemm_fp8 4096      # on a Hopper GPU
"""

from __future__ import annotations

import sys

import schedlang as sl
from examples import gpu_gemm_fp8
from examples.tune_gemm_fp16 import tune_square, wgmma_knobs


@sl.tune.template
def gemm(cfg, m, n, k, dtype="float8_e4m3fn", out_dtype="bfloat16"):
    a, b, c = gpu_gemm_fp8.gemm(m, n, k, dtype, out_dtype)
    cfg.add_flop(2.0 * m * n * k)
    return wgmma_knobs(cfg, a, b, c, [128, 256], gpu_gemm_fp8.schedule), [a, b, c]


def main(size: int = 4096) -> None:
    tune_square(gemm, size)


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
