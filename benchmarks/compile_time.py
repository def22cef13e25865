"""How long `sl.build` takes for the tiled, vectorized, parallel matmul (lower + LLVM + JIT).

"cold" is the first build in this process (LLVM initialisation included, imports excluded);
"warm" builds run with the in-memory compile cache cleared before each, so every one lowers,
generates, optimises, compiles and links again. The disk cache is off. Target: < 150 ms warm.

    python benchmarks/compile_time.py
"""

from __future__ import annotations

import os
import statistics
import time

os.environ.pop("SCHEDLANG_CACHE_DIR", None)

import schedlang as sl  # noqa: E402
from schedlang.codegen import cache  # noqa: E402


def schedule():
    m, n, k_size = sl.var("M"), sl.var("N"), sl.var("K")
    a = sl.placeholder((m, k_size), name="A")
    b = sl.placeholder((k_size, n), name="B")
    k = sl.reduce_axis((0, k_size), name="k")
    c = sl.compute((m, n), lambda i, j: sl.sum(a[i, k] * b[k, j], axis=k), name="C")
    s = sl.create_schedule(c)
    mo, no, mi, ni = s[c].tile(c.op.axis[0], c.op.axis[1], 32, 32)
    ko, ki = s[c].split(k, factor=4)
    s[c].reorder(mo, no, ko, mi, ki, ni)
    s[c].vectorize(ni)
    s[c].parallel(mo)
    return s, [a, b, c]


def timed_build() -> tuple[float, float]:
    """Seconds for the whole build and for lowering alone."""
    s, args = schedule()
    start = time.perf_counter()
    sl.lower(s, args)
    lower_s = time.perf_counter() - start
    cache.clear_memory_cache()
    s, args = schedule()
    start = time.perf_counter()
    sl.build(s, args)
    return time.perf_counter() - start, lower_s


def main() -> None:
    cold, _ = timed_build()
    warm = [timed_build() for _ in range(7)]
    total = statistics.median(t for t, _ in warm)
    lowering = statistics.median(t for _, t in warm)
    print("sl.build of the 32x32-tiled, vectorized, parallel matmul (symbolic M, N, K)")
    print(f"cold (first build, LLVM start-up included): {cold * 1e3:6.1f} ms")
    print(f"warm (median of {len(warm)}, cache cleared):        {total * 1e3:6.1f} ms")
    print(f"  of which lowering (isl):                  {lowering * 1e3:6.1f} ms")
    print(f"  code generation, -O3, object code, link:  {(total - lowering) * 1e3:6.1f} ms")
    print(f"target < 150 ms warm: {'met' if total < 0.150 else 'NOT met'}")


if __name__ == "__main__":
    main()
