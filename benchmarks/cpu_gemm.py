"""1024^3 float32 matmul on the CPU under the steps of TVM TE's opt_gemm tutorial, against numpy.

The steps are those of ``schedlang demo`` (`schedlang.demo.STEPS`: blocking, vectorization, loop
permutation, array packing, write cache, parallel), built here at constant sizes, as the tutorial
does, so that no loop needs a guard for a partial block. Each is built with `sl.build` (the CPU
JIT), checked against numpy on a NaN-filled output, and timed (median of several runs); the table
gives GFLOP/s and the ratio to numpy's matmul in the same process.

    python benchmarks/cpu_gemm.py [--size 1024]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import schedlang as sl
from schedlang.demo import STEPS, matmul
from schedlang.runtime.arrays import aligned_copy, aligned_empty


def _median_time(fn, budget: float = 2.0, most: int = 10) -> float:
    """Median of up to `most` runs, fewer for slow ones (about `budget` seconds in all)."""
    start = time.perf_counter()
    fn()
    first = time.perf_counter() - start
    runs = max(1, min(most, int(budget / max(first, 1e-9))))
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return float(np.median(samples))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1024)
    n = parser.parse_args().size
    flops = 2.0 * n**3
    rng = np.random.default_rng(0)
    a_np = aligned_copy(rng.standard_normal((n, n), dtype=np.float32))
    b_np = aligned_copy(rng.standard_normal((n, n), dtype=np.float32))
    expected = a_np @ b_np
    base = _median_time(lambda: np.matmul(a_np, b_np))
    rows = [("numpy matmul", base, "-", "-")]
    for step in STEPS:
        a, b, c, packed_b = matmul(n, n, n, packed=step.packed)
        s = sl.create_schedule(c)
        step.schedule(s, c, packed_b)
        start = time.perf_counter()
        kernel = sl.build(s, [a, b, c])
        build_s = time.perf_counter() - start
        out = aligned_empty((n, n))
        out[...] = np.nan
        kernel(a_np, b_np, out)
        np.testing.assert_allclose(out, expected, rtol=1e-3, atol=1e-3)
        seconds = _median_time(lambda k=kernel, o=out: k(a_np, b_np, o))
        rows.append((step.name, seconds, f"{build_s * 1e3:.0f}", "yes"))
    print(f"matmul {n}x{n}x{n} float32, {sl.__name__} CPU JIT vs numpy ({np.__version__})")
    header = ("schedule", "ms", "GFLOP/s", "vs numpy", "build ms", "checked")
    table = [header]
    for name, seconds, build_ms, checked in rows:
        gflops = flops / seconds / 1e9
        table.append(
            (
                name,
                f"{seconds * 1e3:.1f}",
                f"{gflops:.1f}",
                f"{base / seconds:.2f}x",
                build_ms,
                checked,
            )
        )
    widths = [max(len(r[k]) for r in table) for k in range(len(header))]
    for row in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())


if __name__ == "__main__":
    main()
