"""The float16 GEMM on Hopper's warpgroup tensor cores (`examples.gpu_gemm_wgmma`) as a
template: block shape, k step, pipeline depth, the copy engine and block grouping are knobs.

The space (768 points): block rows 64/128/256 (one to four warpgroups), block columns
64/128/192/256, k step 64/128, 2 to 5 pipeline stages, copies by the threads or by the copy
engine (TMA), results stored from registers or by the copy engine, and blocks launched in order
or in groups of 8 block columns. The template declares invalid the points whose stages (and
staged results) would not fit in a multiprocessor's 227 KB of shared memory; the fastest
options `gpu_gemm_wgmma.FAST` (128 x 256, step 64, 4 stages, TMA loads and stores) are one of
the points.

    python -m examples.tune_gemm_fp16 4096      # on a Hopper GPU
"""

from __future__ import annotations

import sys

import schedlang as sl
from examples import gpu_gemm_wgmma
from schedlang.ir.dtype import itemsize

SHARED_BYTES = 227 * 1024  # what one block may have on sm_90
STAGED_PIECE = 64 * 128  # a warpgroup's staging buffer for stores by the copy engine


@sl.tune.template
def gemm(cfg, m, n, k, dtype="float16"):
    a, b, c = gpu_gemm_wgmma.gemm(m, n, k, dtype, "float32")
    cfg.add_flop(2.0 * m * n * k)
    return wgmma_knobs(cfg, a, b, c, steps=[64, 128]), [a, b, c]


def wgmma_knobs(cfg, a, b, c, steps: list[int], schedule=gpu_gemm_wgmma.schedule):
    """`schedule` of the GEMM ``c = a @ b`` with the knobs of the module docstring drawn from
    `cfg`, k by one of `steps` elements (the rows of a step's tiles: `steps` times the
    operands' bytes); the points whose tiles do not fit are `Invalid`."""
    block_rows = cfg.choice("block_rows", [64, 128, 256])
    block_cols = cfg.choice("block_cols", [64, 128, 192, 256])
    step = cfg.choice("step", steps)
    stages = cfg.choice("stages", [2, 3, 4, 5])
    tma = cfg.flag("tma")
    tma_store = cfg.flag("tma_store")
    group = cfg.choice("group", [0, 8])
    staged = (block_rows + block_cols) * step * itemsize(a.dtype) * stages
    if staged > SHARED_BYTES:
        raise sl.tune.Invalid(f"{stages} stages of {staged // stages} bytes exceed 227 KB")
    if tma_store and staged + block_rows // 64 * STAGED_PIECE > SHARED_BYTES:
        raise sl.tune.Invalid(f"{stages} stages leave no room for the staged results")
    return schedule(
        a, b, c, block_rows=block_rows, block_cols=block_cols, step=step, stages=stages,
        tma=tma, group=group, tma_store=tma_store,
    )  # fmt: skip


def tune_square(template, size: int) -> None:
    """Tune the GEMM `template` at ``size``^3 on the GPU: the log, then the best point."""
    log = sl.tune.run(template(size, size, size), target="cuda", search="grid")
    best = log.best()
    print(log)
    print(f"best: {best.knobs}: {2.0 * size**3 / best.seconds / 1e12:.0f} TFLOP/s")


def main(size: int = 4096) -> None:
    tune_square(gemm, size)


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
