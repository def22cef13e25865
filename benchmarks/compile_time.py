"""How long schedlang takes to compile three matmul schedules, and schedules whose footprints
isl states in many pieces.

1. `sl.build` of the tiled, vectorized, parallel CPU matmul (lower + LLVM + JIT). "cold" is the
   first build in this process (LLVM initialisation included, imports excluded); "warm" builds run
   with the in-memory compile cache cleared before each, so every one lowers, generates,
   optimises, compiles and links again. The disk cache is off. Target: < 150 ms warm.
2. `sl.lower` alone of TE's GPU matmul recipe at 1024^3: 64x64 block tiles over 8x8 threads, a
   local accumulator per thread, and shared tiles of A and B refilled at every k step of 8 by all
   threads of the block (fused, split and bound to the threads). It has three cache stages and
   thread bindings, so it exercises the polyhedral layer far more than the CPU schedule; lowering
   needs no GPU. "cold" is its first lowering in the process. Target: < 50 ms warm.
3. `sl.build` for the cuda target of ``examples/gpu_gemm.py``'s GEMM (128x128 tiles, 16x16
   threads, 2x2 virtual threads, k by 8, double buffered), to PTX: no GPU needed, and the
   driver's loading of the PTX is not included. At 4096^3 and at 4000^3, where the tiles do not
   divide and each kernel holds a whole-tile and a boundary version of its loop. "cold" is the
   first build in a fresh process (imports of schedlang excluded; its lazy imports, LLVM's
   start-up and the CUDA probe included); "warm" the median of builds with the compile cache
   cleared, and the same steps run one at a time for the time of each. Target: < 100 ms cold.
4. `sl.build` for the CPU of two schedules whose compute_at footprints isl once stated in ever
   more pieces: TOPI's x86 ``dense_pack`` with a bias (``examples/te_dense_pack.py``, batch 128,
   1024 -> 1000), and chains of 2 to 6 stencils with diagonal taps, each computed at the next
   one's 32 x 32 tiles (``examples/x_stencils.py``, 257 x 251). One build each, the compile
   cache cleared. Target: < 10 s each, and time growing about linearly with the chain's depth.

    python benchmarks/compile_time.py
    python benchmarks/compile_time.py --footprints   # part 4 alone
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ["SCHEDLANG_CACHE_DIR"] = "off"  # compiles measured, not loads
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # for examples/

import schedlang as sl  # noqa: E402
from benchmarks.build_phases import gpu_build_phases  # noqa: E402
from examples import gpu_gemm, te_dense_pack, x_stencils  # noqa: E402
from schedlang.codegen.cpu import cache  # noqa: E402

RUNS = 7
GPU_SIZES = (4096, 4000)
GPU_TARGET = "cuda -arch=sm_90 -min-blocks-per-sm=2"  # gpu_gemm.build's, on an H100


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


def gpu_gemm_schedule(n: int):
    at, b, c = gpu_gemm.gemm(n, n, n)
    return gpu_gemm.schedule(at, b, c), [at, b, c]


def timed_gpu_build(n: int) -> tuple[float, str]:
    """Seconds for `sl.build` of the GPU GEMM at n^3 (compile cache cleared), and its PTX."""
    from schedlang.codegen.nvptx import compile as nvptx_compile

    nvptx_compile.clear_memory_cache()
    s, args = gpu_gemm_schedule(n)
    start = time.perf_counter()
    kernel = sl.build(s, args, target=GPU_TARGET)
    return time.perf_counter() - start, kernel.ptx


def cold_gpu_build(n: int) -> float:
    """Seconds of the first GPU GEMM build in a fresh process."""
    out = subprocess.run(
        [sys.executable, __file__, "--cold-gpu", str(n)],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(sl.__file__).parent.parent)},
    )
    return float(out.stdout)


def _row(label: str, seconds: float) -> None:
    print(f"{label}:".ljust(56) + f"{seconds * 1e3:6.1f} ms")


def report_gpu() -> None:
    print("sl.build of examples/gpu_gemm.py for cuda, to PTX (the driver's loading not included)")
    for n in GPU_SIZES:
        cold = cold_gpu_build(n)
        warm, ptx = zip(*(timed_gpu_build(n) for _ in range(RUNS)))
        runs = [gpu_build_phases(*gpu_gemm_schedule(n), "sm_90", 2) for _ in range(RUNS)]
        if any(p != ptx[0] for _, p in runs):
            raise SystemExit("the step-by-step build made other PTX than sl.build")
        _row(f"{n}^3, cold (first build in a fresh process)", cold)
        _row(f"{n}^3, warm (median of {RUNS}, cache cleared)", statistics.median(warm))
        for step in runs[0][0]:
            _row(f"  {step}", statistics.median(times[step] for times, _ in runs))
        print(f"target < 100 ms cold: {'met' if cold < 0.100 else 'NOT met'}")


def timed_footprint_builds() -> dict[str, float]:
    """Seconds of one CPU build of each schedule of part 4, by label."""
    times = {}
    data, weight, bias, dense, out = te_dense_pack.dense_pack(128, 1000, 1024)
    s = te_dense_pack.schedule(dense, out)
    cache.clear_memory_cache()
    start = time.perf_counter()
    sl.build(s, [data, weight, bias, out])
    times["dense_pack with bias, 128 x 1024 -> 1000"] = time.perf_counter() - start
    for depth in range(2, 7):
        a, stages = x_stencils.x_stencils(257, 251, depth)
        s = x_stencils.schedule(stages)
        cache.clear_memory_cache()
        start = time.perf_counter()
        sl.build(s, [a, stages[-1]])
        times[f"X stencils, depth {depth}, 257 x 251"] = time.perf_counter() - start
    return times


def report_footprints() -> None:
    print("sl.build of schedules with many-piece footprints (CPU, one build each)")
    times = timed_footprint_builds()
    for label, seconds in times.items():
        _row(label, seconds)
    print(f"target < 10 s each: {'met' if max(times.values()) < 10 else 'NOT met'}")


def main() -> None:
    if sys.argv[1:2] == ["--footprints"]:
        report_footprints()
        return
    if sys.argv[1:2] == ["--cold-gpu"]:
        s, args = gpu_gemm_schedule(int(sys.argv[2]))
        start = time.perf_counter()
        sl.build(s, args, target=GPU_TARGET)
        print(time.perf_counter() - start)
        return
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
    print()
    report_gpu()
    print()
    report_footprints()


if __name__ == "__main__":
    main()
