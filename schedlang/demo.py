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
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
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
from .demo_numpy import YARDSTICK, faster, yardstick
from .errors import LoweringError
from .ir.tensor import Tensor
from .platform_info import parallel_threads
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
        rows, numpy_line = _run_cpu(a_np, b_np, expected, show_loops)
    _print_table(f"matmul {size}x{size}x{size} float32, compiled for {where}", rows, size)
    if name != "cuda":
        print(
            "spread: the interquartile range of the timed rounds over their median; the steps "
            "and numpy are timed in interleaved rounds"
        )
        print(numpy_line)
    return all(row.matches != "NO" for row in rows)


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


@dataclass(frozen=True)
class Row:
    """One line of the demo's table: `spread` is the interquartile range of the rounds over
    their median (None where one measurement stands for the step), `note` what the reader
    should know of the number."""

    name: str
    seconds: float
    matches: str
    spread: float | None = None
    note: str = ""


def _run_cpu(
    a_np: np.ndarray, b_np: np.ndarray, expected: np.ndarray, show_loops: bool
) -> tuple[list[Row], str]:
    """A `Row` per step of `STEPS` and for numpy's matmul, and the line that says how numpy
    was timed (`demo_numpy`). Every kernel is built and checked first, then all are timed in
    interleaved rounds (`interleaved_rounds`), so that a moment of a noisy machine slows one
    round of every step rather than every round of one."""
    size = a_np.shape[0]
    calls: dict[str, Callable[[], object]] = {}
    matches: dict[str, str] = {}
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
        matches[step.name] = "yes" if np.allclose(out, expected, rtol=1e-3, atol=1e-3) else "NO"
        calls[step.name] = lambda k=kernel, o=out: k(a_np, b_np, o)
    stick = yardstick()
    for key in stick.settings:
        calls[key] = lambda: np.matmul(a_np, b_np)
    samples = interleaved_rounds(calls, setups=stick.setups)
    best, note, line = faster(stick, samples)
    rows = [
        Row(name, float(np.median(times)), matches[name], _spread(times))
        for name, times in samples.items()
        if name in matches
    ]
    times = samples[best]
    rows.append(Row(YARDSTICK, float(np.median(times)), "-", _spread(times), note))
    return annotate(rows, parallel_threads()), line


def interleaved_rounds(
    calls: dict[str, Callable[[], object]],
    budget: float = 3.0,
    rounds: tuple[int, int] = (5, 21),
    clock: Callable[[], float] = time.perf_counter,
    setups: Mapping[str, Callable[[], AbstractContextManager]] | None = None,
) -> dict[str, list[float]]:
    """Seconds of each call in each round: as many rounds as `budget` allows (within
    `rounds`), each round calling every function once, in an order rotated round by round.
    A call named in `setups` runs inside that context (a BLAS thread limit), entered and left
    outside the timed part."""
    names = list(calls)
    setups = setups or {}

    def timed(name: str) -> float:
        with setups.get(name, nullcontext)():
            start = clock()
            calls[name]()
            return clock() - start

    first = {name: timed(name) for name in names}  # a warm-up, which says what a round costs
    count = int(budget / max(sum(first.values()), 1e-9))
    count = min(max(count, rounds[0]), rounds[1])
    samples: dict[str, list[float]] = {name: [] for name in names}
    for r in range(count):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            samples[name].append(timed(name))
    return samples


def _spread(times: list[float]) -> float:
    low, median, high = np.percentile(times, [25, 50, 75])
    return float((high - low) / median) if median > 0 else 0.0


def annotate(rows: list[Row], cores: int) -> list[Row]:
    """`rows` with a note where a step is slower than the one before by more than the rounds'
    spread: a step that cannot help on this machine says so rather than showing a slowdown
    without a word (a parallel loop, on the cores this process may use)."""
    out = rows[:1]
    for before, row in zip(rows, rows[1:]):
        noise = max(before.spread or 0.0, row.spread or 0.0, 0.05)
        note = row.note
        if row.name.endswith("parallel") and row.seconds > before.seconds / (1 + noise):
            note = f"no gain here: {cores} core(s) usable for its threads"
        elif row.matches != "-" and row.seconds > before.seconds * (1 + noise):
            note = "slower than the step before, on this machine"
        out.append(Row(row.name, row.seconds, row.matches, row.spread, note))
    return out


def _print_table(title: str, rows: list[Row], size: int) -> None:
    flops = 2.0 * size**3
    naive = rows[0].seconds
    header = ("schedule", "ms", "spread", "GFLOP/s", "vs naive", "matches reference", "")
    table = [header] + [
        (
            row.name,
            f"{row.seconds * 1e3:.3f}",
            "-" if row.spread is None else f"{row.spread:.0%}",
            f"{flops / row.seconds / 1e9:.1f}",
            f"{naive / row.seconds:.1f}x",
            row.matches,
            row.note,
        )
        for row in rows
    ]
    widths = [max(len(r[k]) for r in table) for k in range(len(header))]
    print(title)
    for line in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip())
