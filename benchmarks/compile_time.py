"""How long schedlang takes to compile two matmul schedules.

1. `sl.build` of the tiled, vectorized, parallel CPU matmul (lower + LLVM + JIT). "cold" is the
   first build in this process (LLVM initialisation included, imports excluded); "warm" builds run
   with the in-memory compile cache cleared before each, so every one lowers, generates,
   optimises, compiles and links again. The disk cache is off. Target: < 150 ms warm.
2. `sl.lower` alone of TE's GPU matmul recipe at 1024^3: 64x64 block tiles over 8x8 threads, a
   local accumulator per thread, and shared tiles of A and B refilled at every k step of 8 by all
   threads of the block (fused, split and bound to the threads). It has three cache stages and
   thread bindings, so it exercises the polyhedral layer far more than the CPU schedule; lowering
   needs no GPU. "cold" is its first lowering in the process. Target: < 50 ms warm.

    python benchmarks/compile_time.py
"""

from __future__ import annotations

import os
import statistics
import time

os.environ.pop("SCHEDLANG_CACHE_DIR", None)

import schedlang as sl  # noqa: E402
from schedlang.codegen import cache  # noqa: E402

RUNS = 7


def matmul(m, n, k_size):
    a = sl.placeholder((m, k_size), name="A")
    b = sl.placeholder((k_size, n), name="B")
    k = sl.reduce_axis((0, k_size), name="k")
    c = sl.compute((m, n), lambda i, j: sl.sum(a[i, k] * b[k, j], axis=k), name="C")
    return a, b, c


def cpu_schedule():
    a, b, c = matmul(sl.var("M"), sl.var("N"), sl.var("K"))
    s = sl.create_schedule(c)
    mo, no, mi, ni = s[c].tile(c.op.axis[0], c.op.axis[1], 32, 32)
    ko, ki = s[c].split(c.op.reduce_axis[0], factor=4)
    s[c].reorder(mo, no, ko, mi, ki, ni)
    s[c].vectorize(ni)
    s[c].parallel(mo)
    return s, [a, b, c]


def gpu_schedule(size=1024, tile=64, threads=8, k_factor=8):
    a, b, c = matmul(size, size, size)
    s = sl.create_schedule(c)
    a_shared = s.cache_read(a, "shared", [c])
    b_shared = s.cache_read(b, "shared", [c])
    c_local = s.cache_write(c, "local")
    by, yi = s[c].split(c.op.axis[0], factor=tile)
    bx, xi = s[c].split(c.op.axis[1], factor=tile)
    ty, yi = s[c].split(yi, nparts=threads)
    tx, xi = s[c].split(xi, nparts=threads)
    s[c].reorder(by, bx, ty, tx, yi, xi)
    for axis, tag in (
        (by, "blockIdx.y"),
        (bx, "blockIdx.x"),
        (ty, "threadIdx.y"),
        (tx, "threadIdx.x"),
    ):
        s[c].bind(axis, sl.thread_axis(tag))
    s[c_local].compute_at(s[c], tx)
    yc, xc = s[c_local].op.axis
    ko, ki = s[c_local].split(s[c_local].op.reduce_axis[0], factor=k_factor)
    s[c_local].reorder(ko, ki, yc, xc)
    for shared in (a_shared, b_shared):
        s[shared].compute_at(s[c_local], ko)
        fused = s[shared].fuse(*s[shared].op.axis)
        t, _ = s[shared].split(fused, nparts=threads * threads)
        fy, fx = s[shared].split(t, nparts=threads)
        s[shared].bind(fy, sl.thread_axis("threadIdx.y"))
        s[shared].bind(fx, sl.thread_axis("threadIdx.x"))
    return s, [a, b, c]


def timed_build() -> tuple[float, float]:
    """Seconds for the whole build and for lowering alone."""
    s, args = cpu_schedule()
    start = time.perf_counter()
    sl.lower(s, args)
    lower_s = time.perf_counter() - start
    cache.clear_memory_cache()
    s, args = cpu_schedule()
    start = time.perf_counter()
    sl.build(s, args)
    return time.perf_counter() - start, lower_s


def timed_gpu_lowering() -> float:
    s, args = gpu_schedule()
    start = time.perf_counter()
    sl.lower(s, args)
    return time.perf_counter() - start


def main() -> None:
    cold, _ = timed_build()
    warm = [timed_build() for _ in range(RUNS)]
    total = statistics.median(t for t, _ in warm)
    lowering = statistics.median(t for _, t in warm)
    print("sl.build of the 32x32-tiled, vectorized, parallel matmul (symbolic M, N, K)")
    print(f"cold (first build, LLVM start-up included): {cold * 1e3:6.1f} ms")
    print(f"warm (median of {RUNS}, cache cleared):        {total * 1e3:6.1f} ms")
    print(f"  of which lowering (isl):                  {lowering * 1e3:6.1f} ms")
    print(f"  code generation, -O3, object code, link:  {(total - lowering) * 1e3:6.1f} ms")
    print(f"target < 150 ms warm: {'met' if total < 0.150 else 'NOT met'}")
    print()
    gpu_cold = timed_gpu_lowering()
    gpu_warm = statistics.median(timed_gpu_lowering() for _ in range(RUNS))
    print("sl.lower of the GPU matmul (1024^3, 64x64 tiles, 8x8 threads, shared A/B, local C)")
    print(f"cold (first lowering of this schedule):     {gpu_cold * 1e3:6.1f} ms")
    print(f"warm (median of {RUNS}):                       {gpu_warm * 1e3:6.1f} ms")
    print(f"target < 50 ms warm: {'met' if gpu_warm < 0.050 else 'NOT met'}")


if __name__ == "__main__":
    main()
