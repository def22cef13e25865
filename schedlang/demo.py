"""``schedlang demo``: one matmul, the steps of TE's opt_gemm tutorial as schedules.

Each schedule is built with `sl.build` (lowered through the polyhedral layer, compiled by the CPU
JIT), checked against the numpy reference of the unscheduled algorithm, and timed; the table
gives GFLOP/s and the speed-up over the naive schedule, with numpy's own matmul as a yardstick.
The symbolic sizes M, N, K are read off the arrays, so one kernel runs any size.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from . import build, compute, create_schedule, placeholder, reduce_axis, reference, var
from . import sum as sl_sum


def _matmul():
    m, n, k_size = var("M"), var("N"), var("K")
    a = placeholder((m, k_size), name="A")
    b = placeholder((k_size, n), name="B")
    k = reduce_axis((0, k_size), name="k")
    c = compute((m, n), lambda i, j: sl_sum(a[i, k] * b[k, j], axis=k), name="C")
    return a, b, c


def _naive(s, c):
    return s


def _tiled(s, c, k_inside_rows: bool):
    """32x32 blocks (TE's bn) with k split by 4; the k.inner loop outside or inside the rows."""
    i, j = s[c].op.axis
    io, jo, ii, ji = s[c].tile(i, j, 32, 32)
    ko, ki = s[c].split(s[c].op.reduce_axis[0], 4)
    if k_inside_rows:
        s[c].reorder(io, jo, ko, ii, ki, ji)
    else:
        s[c].reorder(io, jo, ko, ki, ii, ji)
    return io, ki, ji


def _blocked(s, c):
    _tiled(s, c, k_inside_rows=False)
    return s


def _vectorized(s, c):
    _, _, ji = _tiled(s, c, k_inside_rows=False)
    s[c].vectorize(ji)
    return s


def _permuted(s, c):
    _, _, ji = _tiled(s, c, k_inside_rows=True)
    s[c].vectorize(ji)
    return s


def _parallel(s, c):
    io, ki, ji = _tiled(s, c, k_inside_rows=True)
    s[c].vectorize(ji)
    s[c].unroll(ki)
    s[c].parallel(io)
    return s


SCHEDULES: list[tuple[str, Callable]] = [
    ("naive", _naive),
    ("blocking 32x32, k split by 4", _blocked),
    ("blocking + vectorize", _vectorized),
    ("loop permutation", _permuted),
    ("permutation + unroll + parallel", _parallel),
]


def run(size: int = 512, target: str = "auto", show_loops: bool = True) -> bool:
    """Build, check and time every schedule at `size`^3; print a table. True if all match."""
    from .build import resolve_target
    from .runtime.arrays import aligned_copy, aligned_empty

    resolve_target(target)  # raises for a target that is not available here
    a, b, c = _matmul()
    rng = np.random.default_rng(0)
    a_np = aligned_copy(rng.standard_normal((size, size), dtype=np.float32))
    b_np = aligned_copy(rng.standard_normal((size, size), dtype=np.float32))
    expected = reference(c, {a: a_np, b: b_np})
    flops = 2.0 * size**3
    rows, ok, naive = [], True, None
    for name, make in SCHEDULES:
        s = make(create_schedule(c), c)
        kernel = build(s, [a, b, c], target=target)
        if show_loops:
            print(f"# {name}\n{kernel.lowered}\n")
        out = aligned_empty((size, size))
        out[...] = np.nan
        kernel(a_np, b_np, out)
        good = bool(np.allclose(out, expected, rtol=1e-3, atol=1e-3))
        ok &= good
        seconds = _median_seconds(lambda k=kernel, o=out: k(a_np, b_np, o))
        naive = seconds if naive is None else naive
        rows.append((name, seconds, "yes" if good else "NO"))
    numpy_seconds = _median_seconds(lambda: np.matmul(a_np, b_np))
    rows.append(("numpy matmul (yardstick)", numpy_seconds, "-"))
    header = ("schedule", "ms", "GFLOP/s", "vs naive", "matches reference")
    table = [header] + [
        (name, f"{t * 1e3:.2f}", f"{flops / t / 1e9:.1f}", f"{naive / t:.1f}x", good)
        for name, t, good in rows
    ]
    widths = [max(len(r[k]) for r in table) for k in range(len(header))]
    print(f"matmul {size}x{size}x{size} float32, compiled for the cpu")
    for row in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    return ok


def _median_seconds(fn: Callable[[], object], budget: float = 1.0, most: int = 7) -> float:
    """Median over up to `most` runs (fewer when one run takes a good part of `budget`)."""
    start = time.perf_counter()
    fn()
    first = time.perf_counter() - start
    samples = []
    for _ in range(max(1, min(most, int(budget / max(first, 1e-9))))):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return float(np.median(samples))
