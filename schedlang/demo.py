"""``schedlang demo``: one matmul, the steps of TE's tutorials as schedules.

On the cpu, the steps of the opt_gemm tutorial: each schedule is built with `sl.build` (lowered
through the polyhedral layer, compiled by the CPU JIT), checked against the numpy reference of
the unscheduled algorithm on a NaN-filled output, and timed; the table gives GFLOP/s and the
speed-up over the naive schedule, with numpy's own matmul as a yardstick. The symbolic sizes M,
N, K are read off the arrays, so one kernel runs any size. `STEPS` and `matmul` are shared with
``benchmarks/cpu_gemm.py``, which builds them at constant sizes. On a GPU, the steps of TE's GPU
tutorials instead (`demo_cuda`), with torch's matmul as the yardstick.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from . import (
    build,
    compute,
    create_schedule,
    if_then_else,
    placeholder,
    reduce_axis,
    reference,
    var,
)
from . import sum as sl_sum
from .errors import LoweringError
from .ir.tensor import Tensor
from .runtime.arrays import aligned_copy, aligned_empty
from .schedule.schedule import Schedule

BN = 32  # the tutorial's block size, also the length of packedB's rows
KFACTOR = 4  # the tutorial's split of the reduction


def matmul(m, n, k_size, packed: bool) -> tuple[Tensor, Tensor, Tensor, Tensor | None]:
    """A, B, C = A @ B and, when `packed`, the tutorial's packedB that C then reads instead of B.

    packedB[j // BN, k, j % BN] = B[k, j] keeps a block's BN columns of B contiguous for every k.
    Its first extent is ceil(n / BN) so that any n fits; the entries past column n are zeros,
    written with if_then_else (so B is never read out of bounds).
    """
    a = placeholder((m, k_size), name="A")
    b = placeholder((k_size, n), name="B")
    k = reduce_axis((0, k_size), name="k")
    if not packed:
        c = compute((m, n), lambda i, j: sl_sum(a[i, k] * b[k, j], axis=k), name="C")
        return a, b, c, None
    packed_b = compute(
        ((n + BN - 1) // BN, k_size, BN),
        lambda x, kk, y: if_then_else(x * BN + y < n, b[kk, x * BN + y], 0.0),
        name="packedB",
    )
    c = compute(
        (m, n), lambda i, j: sl_sum(a[i, k] * packed_b[j // BN, k, j % BN], axis=k), name="C"
    )
    return a, b, c, packed_b


Scheduler = Callable[[Schedule, Tensor, "Tensor | None"], None]


@dataclass(frozen=True)
class Step:
    """One step of the tutorial: its schedule, and whether its algorithm reads packedB."""

    name: str
    packed: bool
    schedule: Scheduler


def _naive(s: Schedule, c: Tensor, packed_b: Tensor | None) -> None:
    pass


def _tile(s: Schedule, c: Tensor, k_inside_rows: bool):
    """BN x BN blocks of C with k split by KFACTOR; the k.inner loop outside or inside the rows."""
    mo, no, mi, ni = s[c].tile(c.op.axis[0], c.op.axis[1], BN, BN)
    ko, ki = s[c].split(s[c].op.reduce_axis[0], factor=KFACTOR)
    if k_inside_rows:
        s[c].reorder(mo, no, ko, mi, ki, ni)
    else:
        s[c].reorder(mo, no, ko, ki, mi, ni)
    return ni


def _blocking(s: Schedule, c: Tensor, packed_b: Tensor | None) -> None:
    _tile(s, c, k_inside_rows=False)


def _vectorization(s: Schedule, c: Tensor, packed_b: Tensor | None) -> None:
    s[c].vectorize(_tile(s, c, k_inside_rows=False))


def _loop_permutation(s: Schedule, c: Tensor, packed_b: Tensor | None) -> None:
    s[c].vectorize(_tile(s, c, k_inside_rows=True))


def _pack(s: Schedule, packed_b: Tensor) -> None:
    big_n, _, little_n = s[packed_b].op.axis
    s[packed_b].vectorize(little_n)
    s[packed_b].parallel(big_n)


def _array_packing(s: Schedule, c: Tensor, packed_b: Tensor) -> None:
    _loop_permutation(s, c, packed_b)
    _pack(s, packed_b)


def _cached_blocks(s: Schedule, c: Tensor, packed_b: Tensor):
    """Each block of C accumulates in a write cache, copied out once its k loop is done."""
    cc = s.cache_write(c, "global")
    mo, no, _, _ = s[c].tile(c.op.axis[0], c.op.axis[1], BN, BN)
    s[cc].compute_at(s[c], no)
    mc, nc = s[cc].op.axis
    ko, ki = s[cc].split(s[cc].op.reduce_axis[0], factor=KFACTOR)
    s[cc].reorder(ko, mc, ki, nc)
    s[cc].vectorize(nc)
    s[cc].unroll(ki)
    _pack(s, packed_b)
    return mo


def _write_cache(s: Schedule, c: Tensor, packed_b: Tensor) -> None:
    _cached_blocks(s, c, packed_b)


def _parallel(s: Schedule, c: Tensor, packed_b: Tensor) -> None:
    s[c].parallel(_cached_blocks(s, c, packed_b))


STEPS: list[Step] = [
    Step("naive", False, _naive),
    Step(f"blocking (bn={BN}, k split by {KFACTOR})", False, _blocking),
    Step("+ vectorization", False, _vectorization),
    Step("+ loop permutation", False, _loop_permutation),
    Step("+ array packing", True, _array_packing),
    Step("+ write cache", True, _write_cache),
    Step("+ parallel", True, _parallel),
]


def run(size: int = 512, target: str = "auto", show_loops: bool = True) -> bool:
    """Build, check and time every step at `size`^3 for `target` (``auto``: cuda when a GPU is
    usable here, else cpu); print a table. True if all match the reference."""
    from .build import resolve_target

    name = resolve_target(target).name
    where = _gpu_name() if name == "cuda" else "the cpu"
    rng = np.random.default_rng(0)
    a_np = aligned_copy(rng.standard_normal((size, size), dtype=np.float32))
    b_np = aligned_copy(rng.standard_normal((size, size), dtype=np.float32))
    a, b, c, _ = matmul(var("M"), var("N"), var("K"), packed=False)
    expected = reference(c, {a: a_np, b: b_np})
    if name == "cuda":
        from .demo_cuda import run_cuda

        rows = run_cuda(size, a_np, b_np, expected, show_loops)
    else:
        rows = _run_cpu(a_np, b_np, expected, show_loops)
    _print_table(f"matmul {size}x{size}x{size} float32, compiled for {where}", rows, size)
    return all(good != "NO" for _, _, good in rows)


def _gpu_name() -> str:
    """The GPU the cuda steps run on; a LoweringError that says why when none is usable."""
    from .platform_info import cuda_available, cuda_devices, probe_cuda

    if not cuda_available():
        raise LoweringError(
            f"the cuda demo needs a usable GPU, and here there is {probe_cuda().detail}; "
            "run it with --target cpu (or auto, which picks the cpu here)"
        )
    device = cuda_devices()[0]
    return f"cuda on {device.name} ({device.arch})"


def _run_cpu(
    a_np: np.ndarray, b_np: np.ndarray, expected: np.ndarray, show_loops: bool
) -> list[tuple[str, float, str]]:
    """``(name, seconds, matches)`` per step of `STEPS` and for numpy's matmul."""
    rows = []
    size = a_np.shape[0]
    for step in STEPS:
        a, b, c, packed_b = matmul(var("M"), var("N"), var("K"), packed=step.packed)
        s = create_schedule(c)
        step.schedule(s, c, packed_b)
        kernel = build(s, [a, b, c], target="cpu")
        if show_loops:
            print(f"# {step.name}\n{kernel.lowered}\n")
        out = aligned_empty((size, size))
        out[...] = np.nan
        kernel(a_np, b_np, out)
        good = bool(np.allclose(out, expected, rtol=1e-3, atol=1e-3))
        seconds = _median_seconds(lambda k=kernel, o=out: k(a_np, b_np, o))
        rows.append((step.name, seconds, "yes" if good else "NO"))
    numpy_seconds = _median_seconds(lambda: np.matmul(a_np, b_np))
    rows.append(("numpy matmul (yardstick)", numpy_seconds, "-"))
    return rows


def _print_table(title: str, rows: list[tuple[str, float, str]], size: int) -> None:
    flops = 2.0 * size**3
    naive = rows[0][1]
    header = ("schedule", "ms", "GFLOP/s", "vs naive", "matches reference")
    table = [header] + [
        (name, f"{t * 1e3:.3f}", f"{flops / t / 1e9:.1f}", f"{naive / t:.1f}x", good)
        for name, t, good in rows
    ]
    widths = [max(len(r[k]) for r in table) for k in range(len(header))]
    print(title)
    for row in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())


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
