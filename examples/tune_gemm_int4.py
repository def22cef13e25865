"""The weight-only int4 GEMM (`examples.gpu_gemm_int4`) as two templates.

`gemm`, on the CUDA cores: a block's outputs (rows x columns), its threads (rows x columns)
and the k step are knobs (144 points). The template declares invalid the points whose threads
would not divide the block, or whose block would give a thread more than 64 accumulators; the
example's defaults are one of the points.

`decode`, for a few rows of A (decoding): the kernel (`decode_schedule` on the CUDA cores,
`tensor_core_decode_schedule` on the tensor cores with W's tile in shared memory, or
`register_decode_schedule` with W as wgmma's A operand in registers), the slice of k a block
sums, and the columns a thread (CUDA cores) or a block (tensor cores; 64 in registers), with
the warps a block (CUDA cores), the pipeline's stages (tensor cores, registers), and the
rows of A a block and the rows of k loaded at once (registers): 960 points, 80 of them valid
(a knob the kernel does not have is declared invalid away from its first value). The rows are
a size variable, bound by the run (``sizes={"m": m}``): the tensor cores' 64-row tile is cut
where they end.

    python -m examples.tune_gemm_int4 2048 10240 8192    # m, n, k; on a GPU: gemm
    python -m examples.tune_gemm_int4 16 10240 8192      # m <= 64: decode
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


KERNELS = ("cuda_cores", "tensor_cores", "registers")


@sl.tune.template
def decode(cfg, m, n, k, group=128, dtype="bfloat16"):
    tensors = gpu_gemm_int4.int4_gemm(sl.var("m"), n, k, group, dtype)
    kernel = cfg.choice("kernel", list(KERNELS))
    slice_k = cfg.choice("slice_k", [64, 128, 256, 512, 1024])
    columns = cfg.choice("columns", [4, 8, 64, 128])
    warps = cfg.choice("warps", [4, 8])
    stages = cfg.choice("stages", [2, 3])
    rows = cfg.choice("rows", [8, 16])
    step = cfg.choice("step", [64, 128])
    cfg.add_flop(2.0 * m * n * k)
    tensor_cores = kernel != "cuda_cores"
    registers = kernel == "registers"
    for knob, value, first, own in (
        ("warps", warps, 4, not tensor_cores),
        ("stages", stages, 2, tensor_cores),
        ("rows", rows, 8, registers),
        ("step", step, 64, registers),
    ):
        if not own and value != first:
            raise sl.tune.Invalid(f"the {kernel} kernel has no {knob} knob")
    if tensor_cores != (columns >= 64):
        raise sl.tune.Invalid(f"{columns} columns: a thread's are 4 or 8, a block's 64 or 128")
    if registers and columns != 64:
        raise sl.tune.Invalid("W in registers: a block is one warpgroup's 64 columns")
    if registers:
        made = gpu_gemm_int4.register_decode_schedule(
            *tensors, slice_k=slice_k, rows=rows, stages=stages, step=step
        )
    elif tensor_cores:
        made = gpu_gemm_int4.tensor_core_decode_schedule(
            *tensors, slice_k=slice_k, block_cols=columns, stages=stages
        )
    else:
        made = gpu_gemm_int4.decode_schedule(
            *tensors, slice_k=slice_k, cols=columns, warps=warps, rows=m
        )
    return made, list(tensors)


def main(m: int = 2048, n: int = 10240, k: int = 8192) -> None:
    if m <= 64:
        log = sl.tune.run(decode(m, n, k), target="cuda", search="grid", sizes={"m": m})
    else:
        log = sl.tune.run(gemm(m, n, k), target="cuda", search="grid")
    best = log.best()
    print(log)
    print(f"best: {best.knobs}: {k * n / 2 / best.seconds / 1e9:.0f} GB/s of packed weight")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
