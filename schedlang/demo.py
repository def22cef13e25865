"""``schedlang demo``: one matmul, the steps of TE's opt_gemm tutorial as schedules.

Each schedule is lowered through the polyhedral layer, run by the loop-IR interpreter (the
backend-independent oracle) on random data with sizes that no tile divides, and compared with the
numpy reference of the unscheduled algorithm. Compiled CPU and CUDA targets plug in here as they
land; until then the table reports lowering time and correctness, not kernel speed.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from . import compute, create_schedule, lower, placeholder, reduce_axis, reference, var
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
    """8x8 blocks with k split by 4; the k.inner loop outside or inside the row loop."""
    i, j = s[c].op.axis
    io, jo, ii, ji = s[c].tile(i, j, 8, 8)
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
    ("blocking 8x8, k split by 4", _blocked),
    ("blocking + vectorize", _vectorized),
    ("loop permutation", _permuted),
    ("permutation + unroll + parallel", _parallel),
]


def run(shape: tuple[int, int, int] = (37, 29, 23), show_loops: bool = True) -> bool:
    """Lower, run and check every schedule; print a table. True if all match the reference."""
    from .loopir.interpret import run as interpret

    a, b, c = _matmul()
    m, n, k = shape
    rng = np.random.default_rng(0)
    a_np = rng.standard_normal((m, k), dtype=np.float32)
    b_np = rng.standard_normal((k, n), dtype=np.float32)
    expected = reference(c, {a: a_np, b: b_np})
    rows, ok = [], True
    for name, make in SCHEDULES:
        s = make(create_schedule(c), c)
        start = time.perf_counter()
        func = lower(s, [a, b, c])
        lower_ms = (time.perf_counter() - start) * 1e3
        if show_loops:
            print(f"# {name}\n{func}\n")
        out = np.full((m, n), np.nan, dtype=np.float32)
        interpret(func, [a_np, b_np, out])
        error = float(np.max(np.abs(out - expected)))
        good = bool(np.allclose(out, expected, rtol=1e-4, atol=1e-4))
        ok &= good
        rows.append((name, f"{lower_ms:7.1f}", f"{error:.1e}", "yes" if good else "NO"))
    header = ("schedule", "lower ms", "max error", "matches reference")
    widths = [max(len(r[k]) for r in rows + [header]) for k in range(4)]
    print(f"matmul {m}x{n}x{k} (float32), run by the loop-IR interpreter")
    for row in [header] + rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)))
    return ok
