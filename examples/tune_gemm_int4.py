"""The weight-only int4 GEMM (`examples.gpu_gemm_int4`) as a template on the CUDA cores: a
block's outputs (rows x columns), its threads (rows x columns) and the k step are knobs (144
points). The template declares invalid the points whose threads would not divide the block, or
whose block would give a thread more than 64 accumulators; the example's defaults are one of
the points.

    python -m examples.tune_gemm_int4 16 10240 8192      # m, n, k; on a GPU
"""

from __future__ import annotations

import sys

import schedlang as sl
from examples import gpu_gemm_int4


@sl.tune.template
def gemm(cfg, m, n, k, group=128, dtype="bfloat16"):
    tensors = gpu_gemm_int4.int4_gemm(m, n, k, group, dtype)
    block_rows = cfg.choice("block_rows", [1, 4, 16, 32])
    block_cols = cfg.choice("block_cols", [64, 128, 256])
    threads_y = cfg.choice("threads_y", [1, 4, 8])
    threads_x = 32
    step = cfg.choice("step", [16, 32, 64, 128])
    cfg.add_flop(2.0 * m * n * k)
    if block_rows % threads_y:
        raise sl.tune.Invalid(f"{threads_y} rows of threads do not divide {block_rows} rows")
    per_thread = block_rows // threads_y * block_cols // threads_x
    if per_thread > 64:
        raise sl.tune.Invalid(f"{per_thread} accumulators a thread")
    s = gpu_gemm_int4.schedule(
        *tensors, block_rows=block_rows, block_cols=block_cols, threads_y=threads_y,
        threads_x=threads_x, step=step,
    )  # fmt: skip
    return s, list(tensors)


def main(m: int = 16, n: int = 10240, k: int = 8192) -> None:
    log = sl.tune.run(gemm(m, n, k), target="cuda", search="grid")
    best = log.best()
    print(log)
    print(f"best: {best.knobs}: {k * n / 2 / best.seconds / 1e9:.0f} GB/s of packed weight")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
