"""The float32 GPU GEMM of `examples.gpu_gemm` as a template: its tile sizes, k step and double
buffering become knobs, and `sl.tune.run` finds the best for a size and a GPU.

The space (216 points): the block's side (64, 128, 256 outputs), the threads per side (8, 16,
32), the virtual threads per side (1, 2, 4), the k step (4 to 32) and double buffering. A
thread holds ``(block / threads)^2`` accumulators; the template declares the points where that
is not 16 or 64 invalid (`sl.tune.Invalid`: below, each thread does too little to hide its
loads; above, ptxas spills), so they cost nothing. isl and the build refuse others (a tile whose
shared-memory stages exceed what a block may have), also before any code is made.

    python -m examples.tune_gemm 4096        # on a GPU: tunes, then prints the best schedule
"""

from __future__ import annotations

import sys

import schedlang as sl
from examples import gpu_gemm

TARGET = "cuda -min-blocks-per-sm=2"  # as gpu_gemm.build: room for two blocks per SM


@sl.tune.template
def gemm(cfg, m, n, k):
    at, b, c = gpu_gemm.gemm(m, n, k)
    block = cfg.choice("block", [64, 128, 256])
    threads = cfg.choice("threads", [8, 16, 32])
    vthreads = cfg.choice("vthreads", [1, 2, 4])
    step = cfg.choice("step", [4, 8, 16, 32])
    double_buffer = cfg.flag("double_buffer")
    cfg.add_flop(2.0 * m * n * k)
    per_thread = block // threads
    if block % threads or per_thread not in (4, 8):
        raise sl.tune.Invalid(f"{per_thread}x{per_thread} accumulators per thread")
    if per_thread % vthreads:
        raise sl.tune.Invalid(f"{vthreads} virtual threads do not divide {per_thread}")
    s = sl.create_schedule(c.op)
    gpu_gemm.schedule_into(
        s, at, b, c, block=block, threads=threads, vthreads=vthreads, step=step,
        double_buffer=double_buffer,
    )  # fmt: skip
    return s, [at, b, c]


def main(size: int = 4096) -> None:
    log = sl.tune.run(gemm(size, size, size), target=TARGET, search="grid")
    best = log.best()
    flops = 2.0 * size**3 / best.seconds
    print(log)
    print(f"best: {best.knobs}: {best.seconds * 1e3:.3f} ms, {flops / 1e12:.1f} TFLOP/s")
    print(best.text)


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
