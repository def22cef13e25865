"""GPU kernels from examples/ against their peers (cuBLAS, torch), side by side in one process.

Each benchmark builds its kernel, checks it against a reference computed on the GPU in float64
(outputs filled with NaN first), times it with CUDA events (median of many runs after warm-up,
random inputs, cycling through several sets of buffers where one set fits in L2), times the
peer the same way, and prints a table with the ratio. Inputs live on
the GPU as torch tensors, passed to the kernels without copies. Needs a GPU and torch.

    python benchmarks/gpu.py [--only gemm,compile] [--repeat 50]
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # for examples/

import torch  # noqa: E402

import schedlang as sl  # noqa: E402
from examples import (  # noqa: E402
    gpu_conv2d,
    gpu_conv2d_fp16,
    gpu_conv2d_wgmma,
    gpu_elementwise,
    gpu_gemm,
    gpu_gemm_fp8,
    gpu_gemm_fp16,
    gpu_gemm_wgmma,
    gpu_rows,
    gpu_transpose,
    gpu_winograd,
)


@dataclass(frozen=True)
class Row:
    """One kernel against one peer; `work` (flops or bytes per call) gives the rates."""

    name: str
    ours_s: float
    peer: str
    peer_s: float
    work: float  # flops or bytes per call
    unit: str  # "TFLOP/s" or "GB/s"

    def cells(self) -> list[str]:
        scale = 1e12 if self.unit == "TFLOP/s" else 1e9
        rate = lambda s: f"{self.work / s / scale:.1f}"  # noqa: E731
        return [
            self.name,
            f"{self.ours_s * 1e3:.3f}",
            rate(self.ours_s),
            self.peer,
            f"{self.peer_s * 1e3:.3f}",
            rate(self.peer_s),
            self.unit,
            f"{self.peer_s / self.ours_s:.2f}x",
        ]


def event_time(fn: Callable[[], object], repeat: int, warmup: int = 3) -> float:
    """Median seconds of `fn` per call, each call bracketed by CUDA events on the current
    stream (the legacy default stream, on which the kernels launch too)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) / 1e3)
    return statistics.median(samples)


def kernel_time(kernel, arrays, repeat: int) -> float:
    """Our kernel's median seconds: `Kernel.time` places the arguments once and times the
    launches alone with CUDA events."""
    return kernel.time(*arrays, repeat=repeat, warmup=3)


def rotation(make: Callable[[], tuple], nbytes: int) -> list[tuple]:
    """Enough sets of arguments from `make` (each of `nbytes`) that cycling through them
    leaves none in L2 from its previous use: timings of data that fits in L2 otherwise
    measure the cache."""
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    return [make() for _ in range(max(1, -(-2 * l2 // nbytes) + 1))]


def rotated_kernel_time(kernel, sets: list[tuple], repeat: int) -> float:
    """`kernel_time` cycling through `sets`, one timed launch each turn."""
    kernel.time(*sets[0], repeat=1, warmup=1)
    samples = [kernel.time(*sets[k % len(sets)], repeat=1, warmup=0) for k in range(repeat)]
    return statistics.median(samples)


def check(got: torch.Tensor, want: torch.Tensor, what: str, rtol: float = 1e-5) -> None:
    """The largest error relative to the largest value: elementwise relative errors mean
    nothing for sums of random signs, some of which land near zero."""
    err = ((got.double() - want).abs().max() / want.abs().max()).item()
    if not err <= rtol:  # also catches NaN
        raise SystemExit(f"{what}: wrong result (max error {err:.2e} of the largest value)")


def bench_gemm(repeat: int) -> list[Row]:
    """The example GEMM with its k step chosen by timing (`gpu_gemm.tuned`: 8 or 16)."""
    torch.backends.cuda.matmul.allow_tf32 = False
    rows = []
    for n in (2048, 4096, 4000, 8192):

        def make(n=n):
            return tuple(torch.randn(n, n, device="cuda") for _ in range(3))

        sets = rotation(make, 3 * 4 * n * n)
        at, b, c = sets[0]
        c.fill_(float("nan"))
        kernel, step = gpu_gemm.tuned(n, n, n)
        kernel(at, b, c)
        check(c, at.double().T @ b.double(), f"gemm {n}")
        reps = max(5, repeat // (n // 2048) ** 2)
        ours = rotated_kernel_time(kernel, sets, reps)
        peer = event_time(partial(_cublas_matmul, itertools.cycle(sets)), reps)
        name = f"gemm {n}^3 fp32 (k by {step})"
        rows.append(Row(name, ours, "cuBLAS", peer, 2.0 * n**3, "TFLOP/s"))
    return rows


def bench_gemm_fp16(repeat: int, options: dict | None = None) -> list[Row]:
    """The tensor-core GEMM (`examples/gpu_gemm_fp16.py`, mma.sync), float16 and bfloat16
    operands accumulated in float32 and stored in the operands' dtype, as torch.matmul
    (cuBLAS) computes them."""
    rows = []
    for dtype, n in itertools.product(("float16", "bfloat16"), (4096, 4000, 8192)):
        kind = getattr(torch, dtype)

        def make(n=n, kind=kind):
            a, b = (torch.randn(n, n, device="cuda").to(kind) for _ in range(2))
            return a, b, torch.empty(n, n, device="cuda", dtype=kind)

        sets = rotation(make, 2 * 2 * n * n + 4 * n * n)
        a, b, c = sets[0]
        c.fill_(float("nan"))
        kernel = gpu_gemm_fp16.build(n, n, n, dtype, out_dtype=dtype, **(options or {}))
        kernel(a, b, c)
        check(c, a.double() @ b.double(), f"gemm {dtype} {n}", rtol=1e-2)
        reps = max(5, repeat // (n // 2048) ** 2)
        ours = rotated_kernel_time(kernel, sets, reps)
        peer = event_time(partial(_cublas_half, itertools.cycle(sets)), reps)
        name = f"gemm {n}^3 {dtype} (mma.sync)"
        rows.append(Row(name, ours, "cuBLAS", peer, 2.0 * n**3, "TFLOP/s"))
    return rows


def bench_gemm_tf32(repeat: int) -> list[Row]:
    """float32 data on the tensor cores as TF32 (`gpu_gemm_fp16.schedule(..., tf32=True)`),
    against cuBLAS with TF32 allowed."""
    torch.backends.cuda.matmul.allow_tf32 = True
    rows = []
    for n in (4096, 8192):

        def make(n=n):
            return tuple(torch.randn(n, n, device="cuda") for _ in range(3))

        sets = rotation(make, 3 * 4 * n * n)
        a, b, c = sets[0]
        c.fill_(float("nan"))
        kernel = gpu_gemm_fp16.build(n, n, n, "float32", "float32", tf32=True)
        kernel(a, b, c)
        check(c, a.double() @ b.double(), f"gemm tf32 {n}", rtol=1e-3)
        reps = max(5, repeat // (n // 2048) ** 2)
        ours = rotated_kernel_time(kernel, sets, reps)
        peer = event_time(partial(_cublas_half, itertools.cycle(sets)), reps)
        rows.append(
            Row(f"gemm {n}^3 tf32 (mma.sync)", ours, "cuBLAS tf32", peer, 2.0 * n**3, "TFLOP/s")
        )
    torch.backends.cuda.matmul.allow_tf32 = False
    return rows


def bench_gemm_fp16_variants(repeat: int) -> list[Row]:
    """Schedules of the tensor-core GEMM at 4096^3 float16 side by side (block and warp tiles,
    k step): what each shape of the schedule is worth, against the same cuBLAS call."""
    n = 4096
    variants = {
        "128x128 blocks, 64x32 warps, k by 32, 3 stages": dict(step=32),
        "same, 2 stages": dict(step=32, stages=2),
        "same, 4 stages": dict(step=32, stages=4),
        "same, double buffered through registers": dict(step=32, stages=0, double_buffer=True),
        "128x128 blocks, 64x64 warps, 3 stages": dict(step=32, warp_cols=64),
        "128x256 blocks, 64x64 warps, 3 stages": dict(step=32, block_cols=256, warp_cols=64),
        "256x128 blocks, 64x64 warps, 3 stages": dict(step=32, block_rows=256, warp_cols=64),
        "128x128 blocks, 64x32 warps, k by 64, 3 stages": dict(step=64),
        "128x128 blocks, 64x32 warps, k by 64, 4 stages": dict(step=64, stages=4),
        "128x128 blocks, 64x64 warps, k by 64, 3 stages": dict(step=64, warp_cols=64),
        "128x128 blocks, 64x32 warps, k by 64, 3 stages, swizzled": dict(step=64, layout="swizzle"),
        "128x128 blocks, 64x32 warps, k by 32, 4 stages, swizzled": dict(
            step=32, stages=4, layout="swizzle"
        ),
    }

    def make():
        a, b = (torch.randn(n, n, device="cuda").half() for _ in range(2))
        return a, b, torch.empty(n, n, device="cuda", dtype=torch.float16)

    sets = rotation(make, 3 * 2 * n * n)
    a, b, c = sets[0]
    peer = event_time(partial(_cublas_half, itertools.cycle(sets)), repeat)
    rows = []
    for name, options in variants.items():
        c.fill_(float("nan"))
        kernel = gpu_gemm_fp16.build(n, n, n, "float16", out_dtype="float16", **options)
        kernel(a, b, c)
        check(c, a.double() @ b.double(), f"gemm fp16 {name}", rtol=1e-2)
        ours = rotated_kernel_time(kernel, sets, repeat)
        rows.append(Row(f"gemm 4096^3 fp16, {name}", ours, "cuBLAS", peer, 2.0 * n**3, "TFLOP/s"))
    return rows


def bench_gemm_wgmma(repeat: int) -> list[Row]:
    """The warpgroup GEMM (`examples/gpu_gemm_wgmma.py`, wgmma on sm_90a), float16 and
    bfloat16 operands summed in float32 and stored in the operands' dtype, against cuBLAS:
    the default schedule, and the copy engine's (`FAST`: copies and stores by the copy engine)
    on persistent blocks (one a multiprocessor)."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    rows = []
    for dtype, n in itertools.product(("float16", "bfloat16"), (4096, 4000, 8192)):
        rows.append(_gemm_wgmma_row(n, dtype, {}, f"gemm {n}^3 {dtype} (wgmma)", repeat))
        fast = dict(gpu_gemm_wgmma.FAST, persistent=sms)
        name = f"gemm {n}^3 {dtype} (wgmma, copy engine, persistent)"
        rows.append(_gemm_wgmma_row(n, dtype, fast, name, repeat))
    return rows


def bench_gemm_wgmma_variants(repeat: int) -> list[Row]:
    """Schedules of the warpgroup GEMM at 4096^3 float16 side by side."""
    variants = {
        "128x128 blocks, k by 64, 3 stages (2 blocks a multiprocessor)": {},
        "same, 2 stages": dict(stages=2),
        "128x128 blocks, 4 stages (1 block)": dict(stages=4),
        "256x128 blocks, 4 stages": dict(block_rows=256, stages=4),
        "128x256 blocks, 4 stages": dict(block_cols=256, stages=4),
        "64x256 blocks, 4 stages": dict(block_rows=64, block_cols=256, stages=4),
        "128x64 blocks, 4 stages (3 blocks a multiprocessor)": dict(block_cols=64, stages=4),
        "128x128 blocks, k by 128, 2 stages": dict(step=128, stages=2),
        "128x128 blocks, k by 128, 3 stages": dict(step=128, stages=3),
        "256x128 blocks, k by 128, 2 stages": dict(block_rows=256, step=128, stages=2),
        "128x256 blocks, k by 128, 2 stages": dict(block_cols=256, step=128, stages=2),
    }
    return [
        _gemm_wgmma_row(4096, "float16", options, f"gemm 4096^3 fp16 wgmma, {name}", repeat)
        for name, options in variants.items()
    ]


def bench_gemm_wgmma_tma(repeat: int) -> list[Row]:
    """The warpgroup GEMM with its tiles copied by the copy engine from a producer warp
    (``pipeline(tma=True)``), beside the default's ``cp.async`` copies, float16."""
    variants = {
        "cp.async, 128x128 blocks, 3 stages (the default)": {},
        "tma, 128x128 blocks, 4 stages": dict(tma=True, stages=4),
        "tma, 128x256 blocks, 4 stages": dict(tma=True, block_cols=256, stages=4),
        "tma, 256x128 blocks, 4 stages": dict(tma=True, block_rows=256, stages=4),
        "tma, 128x256 blocks, 4 stages, groups of 8 columns": dict(
            tma=True, block_cols=256, stages=4, group=8
        ),
        "tma, 256x128 blocks, 4 stages, groups of 8 columns": dict(
            tma=True, block_rows=256, stages=4, group=8
        ),
        "tma, 256x128 blocks, 4 stages, groups of 16 columns": dict(
            tma=True, block_rows=256, stages=4, group=16
        ),
    }
    shapes = (4096, 8192, 4000, (4000, 4096, 4096), (4096, 4000, 4096), (4096, 4096, 4000))
    rows = []
    for n, (name, options) in itertools.product(shapes, variants.items()):
        if n != 4096 and not options.get("tma"):
            continue
        size = f"{n}^3" if isinstance(n, int) else "x".join(map(str, n))
        rows.append(
            _gemm_wgmma_row(n, "float16", options, f"gemm {size} fp16 wgmma, {name}", repeat)
        )
    return rows


def bench_gemm_wgmma_persistent(repeat: int) -> list[Row]:
    """The copy engine's GEMM with one block a multiprocessor taking the tiles in turn (one
    pipeline across a block's tiles), beside the same schedule with a block per tile."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    variants = {
        "128x256 blocks, 4 stages": dict(gpu_gemm_wgmma.FAST),
        "same, persistent": dict(gpu_gemm_wgmma.FAST, persistent=sms),
        "256x128 blocks, 4 stages, persistent": dict(
            tma=True, block_rows=256, stages=4, persistent=sms
        ),
    }
    rows = []
    for dtype, n, (name, options) in itertools.product(
        ("float16", "bfloat16"), (4096, 8192, 4000), variants.items()
    ):
        name = f"gemm {n}^3 {dtype} wgmma, copy engine, {name}"
        rows.append(_gemm_wgmma_row(n, dtype, options, name, repeat))
    return rows


def bench_gemm_wgmma_edges(repeat: int) -> list[Row]:
    """The warpgroup GEMM where one size is not a multiple of its tiles: which edge costs."""
    return [
        _gemm_wgmma_row(shape, "float16", {}, f"gemm {'x'.join(map(str, shape))} fp16", repeat)
        for shape in ((4000, 4096, 4096), (4096, 4000, 4096), (4096, 4096, 4000))
    ]


def _gemm_wgmma_row(n, dtype: str, options: dict, name: str, repeat: int) -> Row:
    """One warpgroup GEMM of `n` (a size, or (m, n, k)) against cuBLAS."""
    m, n, k = (n, n, n) if isinstance(n, int) else n
    kind = getattr(torch, dtype)

    def make():
        a = torch.randn(m, k, device="cuda").to(kind)
        b = torch.randn(k, n, device="cuda").to(kind)
        return a, b, torch.empty(m, n, device="cuda", dtype=kind)

    sets = rotation(make, 2 * (m * k + k * n + m * n))
    a, b, c = sets[0]
    c.fill_(float("nan"))
    kernel = gpu_gemm_wgmma.build(m, n, k, dtype, out_dtype=dtype, **options)
    kernel(a, b, c)
    check(c, a.double() @ b.double(), name, rtol=1e-2)
    reps = max(5, repeat // max(1, m * n * k // 2048**3))
    ours = rotated_kernel_time(kernel, sets, reps)
    peer = event_time(partial(_cublas_half, itertools.cycle(sets)), reps)
    return Row(name, ours, "cuBLAS", peer, 2.0 * m * n * k, "TFLOP/s")


def bench_gemm_fp8(repeat: int) -> list[Row]:
    """The 8-bit float GEMM (`examples/gpu_gemm_fp8.py`, wgmma's k32 form on sm_90a),
    float8_e4m3fn operands (B stored n x k) summed in float32 and stored as float32 or
    bfloat16, against ``torch._scaled_mm`` (cuBLASLt) with per-tensor scales of 1 and its fast
    accumulation (the tensor cores' own, as ours): the default schedule, `FAST`, and `FAST`
    on persistent blocks (one a multiprocessor)."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    rows = []
    variants = (
        ("wgmma", {}),
        ("wgmma, copy engine", gpu_gemm_fp8.FAST),
        ("wgmma, copy engine, persistent", dict(gpu_gemm_fp8.FAST, persistent=sms)),
    )
    for out, n, (how, options) in itertools.product(
        ("float32", "bfloat16"), (4096, 8192, 4000), variants
    ):
        name = f"gemm {n}^3 e4m3 -> {out} ({how})"
        rows.append(_gemm_fp8_row(n, out, options, name, repeat))
    return rows


def _gemm_fp8_row(n: int, out: str, options: dict, name: str, repeat: int) -> Row:
    kind = getattr(torch, out)

    def make():
        a, b = (torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn) for _ in range(2))
        return a, b, torch.empty(n, n, device="cuda", dtype=kind)

    sets = rotation(make, 2 * n * n + kind.itemsize * n * n)
    a, b, c = sets[0]
    c.fill_(float("nan"))
    kernel = gpu_gemm_fp8.build(n, n, n, "float8_e4m3fn", out_dtype=out, **options)
    kernel(a, b, c)
    check(c, a.double() @ b.double().T, name, rtol=1e-2)
    reps = max(5, repeat // (n // 2048) ** 2)
    ours = rotated_kernel_time(kernel, sets, reps)
    one = torch.ones((), device="cuda")
    peer = event_time(partial(_cublas_fp8, one, itertools.cycle(sets)), reps)
    return Row(name, ours, "torch._scaled_mm", peer, 2.0 * n**3, "TFLOP/s")


def bench_gemm_fp8_scaled(repeat: int) -> list[Row]:
    """The scaled 8-bit GEMM as Transformer Engine writes it (`gpu_gemm_fp8.scaled_gemm`:
    ``(A @ B^T) * SA * SB`` to bfloat16, the scales applied to the accumulator in registers),
    per-tensor and per-row scales, against ``torch._scaled_mm`` with the same scales and fast
    accumulation, at 4096^3, 8192^3, 4000^3 and tritonbench's other squares (1024, 2048,
    16384): `FAST` (blocks of 128 x 256, the copy engine), the scales applied in the
    accumulator's own registers (`loopir.gpu.epilogue_in_place`); on persistent blocks below
    8192, launched in groups of 8 block columns from 8192 (`bench_gemm_fp8_scaled_variants`
    compares the two)."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    rows = []
    for per, n in itertools.product(("tensor", "row"), (4096, 8192, 4000, 1024, 2048, 16384)):
        how = "groups of 8" if n >= 8192 else "persistent"
        options = dict(gpu_gemm_fp8.FAST, **({"group": 8} if n >= 8192 else {"persistent": sms}))
        name = f"scaled gemm {n}^3 e4m3 -> bfloat16 (per {per}, {how})"
        rows.append(_scaled_fp8_row(n, per, options, name, repeat))
    return rows


def bench_gemm_fp8_scaled_variants(repeat: int) -> list[Row]:
    """The per-tensor scaled 8-bit GEMM at the sizes where it trails: persistent blocks (tiles
    b, b + P, ... at once) against launches grouped down a few block columns (L2 reuse of
    B's panels; the two cannot be combined)."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    variants = {
        "persistent": dict(gpu_gemm_fp8.FAST, persistent=sms),
        "groups of 4": dict(gpu_gemm_fp8.FAST, group=4),
        "groups of 8": dict(gpu_gemm_fp8.FAST, group=8),
        "groups of 16": dict(gpu_gemm_fp8.FAST, group=16),
    }
    rows = []
    for n, (how, options) in itertools.product((4000, 8192, 16384), variants.items()):
        name = f"scaled gemm {n}^3 e4m3 -> bfloat16 (per tensor, {how})"
        rows.append(_scaled_fp8_row(n, "tensor", options, name, repeat))
    return rows


def _scaled_fp8_row(n: int, per: str, options: dict, name: str, repeat: int) -> Row:
    rows = per == "row"

    def make():
        a, b = (torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn) for _ in range(2))
        sa = torch.rand(n if rows else 1, device="cuda") + 0.5
        sb = torch.rand(n if rows else 1, device="cuda") + 0.5
        return a, b, sa, sb, torch.empty(n, n, device="cuda", dtype=torch.bfloat16)

    sets = rotation(make, 4 * n * n)
    a, b, sa, sb, c = sets[0]
    c.fill_(float("nan"))
    tensors = gpu_gemm_fp8.scaled_gemm(n, n, n, per=per)
    s = gpu_gemm_fp8.schedule(*tensors[:2], tensors[-1], **options)
    kernel = sl.build(s, list(tensors), target="cuda")
    kernel(a, b, sa, sb, c)
    want = (a.double() @ b.double().T) * sa.double()[:, None] * sb.double()[None, :]
    check(c, want, name, rtol=1e-2 * max(1, n / 8192))  # fast accumulation drifts with k
    reps = max(5, repeat // max(1, (n // 2048) ** 2))
    ours = rotated_kernel_time(kernel, sets, reps)
    shaped = [
        (x, y, sx[:, None] if rows else sx[0], sy[None, :] if rows else sy[0], z)
        for x, y, sx, sy, z in sets
    ]
    peer = event_time(partial(_cublas_fp8_scaled, itertools.cycle(shaped)), reps)
    return Row(name, ours, "torch._scaled_mm", peer, 2.0 * n**3, "TFLOP/s")


def _cublas_fp8_scaled(turns) -> torch.Tensor:
    a, b, sa, sb, c = next(turns)
    return torch._scaled_mm(a, b.t(), sa, sb, out_dtype=c.dtype, use_fast_accum=True, out=c)


def _cublas_fp8(scale: torch.Tensor, turns) -> torch.Tensor:
    a, b, c = next(turns)
    return torch._scaled_mm(a, b.t(), scale, scale, out_dtype=c.dtype, use_fast_accum=True, out=c)


def _cublas_half(turns) -> torch.Tensor:
    a, b, c = next(turns)
    return torch.matmul(a, b, out=c)


def _cublas_matmul(turns) -> torch.Tensor:
    at, b, _ = next(turns)
    return torch.matmul(at.T, b)


def bench_elementwise(repeat: int) -> list[Row]:
    n = 64 * 2**20
    a, b = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    c = torch.full((n,), float("nan"), device="cuda")
    kernel = gpu_elementwise.build(n)
    kernel(a, b, c)
    check(c, a.double() + b.double(), "vector add")
    ours = kernel_time(kernel, (a, b, c), repeat)
    peer = event_time(lambda: torch.add(a, b, out=c), repeat)
    return [Row("vector add 64M fp32", ours, "torch.add", peer, 3 * 4 * n, "GB/s")]


def bench_transpose(repeat: int) -> list[Row]:
    n = 8192
    a = torch.randn(n, n, device="cuda")
    t = torch.full((n, n), float("nan"), device="cuda")
    kernel = gpu_transpose.build(n, n)
    kernel(a, t)
    check(t, a.double().T, "transpose")
    ours = kernel_time(kernel, (a, t), repeat)
    copy = event_time(lambda: t.copy_(a), repeat)
    torch_t = event_time(lambda: t.copy_(a.T), repeat)
    work = 2 * 4 * n * n
    return [
        Row("transpose 8192^2 fp32", ours, "device copy", copy, work, "GB/s"),
        Row("transpose 8192^2 fp32", ours, "torch transpose", torch_t, work, "GB/s"),
    ]


def bench_rows(repeat: int) -> list[Row]:
    n = 8192
    a = torch.randn(n, n, device="cuda")
    r = torch.full((n,), float("nan"), device="cuda")
    x, total = gpu_rows.row_sum(n, n)
    kernel = sl.build(gpu_rows.sum_schedule(total), [x, total], target="cuda")
    kernel(a, r)
    check(r, a.double().sum(1), "row sum")
    ours = kernel_time(kernel, (a, r), repeat)
    peer = event_time(lambda: torch.sum(a, dim=1, out=r), repeat)
    rows = [Row("row sum 8192^2 fp32", ours, "torch.sum", peer, 4 * n * n, "GB/s")]
    out = torch.full((n, n), float("nan"), device="cuda")
    tensors = gpu_rows.softmax(n, n)
    kernel = sl.build(gpu_rows.softmax_schedule(*tensors), [tensors[0], tensors[-1]], target="cuda")
    kernel(a, out)
    check(out, torch.softmax(a.double(), dim=1), "softmax")
    ours = kernel_time(kernel, (a, out), repeat)
    peer = event_time(lambda: torch.softmax(a, 1), repeat)
    rows.append(Row("softmax 8192^2 fp32", ours, "torch.softmax", peer, 2 * 4 * n * n, "GB/s"))
    return rows


def bench_conv2d(repeat: int) -> list[Row]:
    """TE's opt_conv_cuda shape: batch 256, 14x14, 256 -> 512 channels, 3x3, padding 1.

    cuDNN autotunes (``cudnn.benchmark``), so the peer is its fastest algorithm for the shape,
    which for a 3x3 filter is a Winograd or FFT one doing fewer multiply-adds; both rates are of
    the direct convolution's FLOPs. Without autotuning cuDNN's heuristic picks an implicit GEMM
    about 4x slower."""
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    batch, cin, cout, size = 256, 256, 512, 14
    a = torch.randn(size, size, cin, batch, device="cuda")
    w = torch.randn(3, 3, cin, cout, device="cuda")
    b = torch.full((size, size, cout, batch), float("nan"), device="cuda")
    kernel = gpu_conv2d.build(batch, cin, cout, size)
    kernel(a, w, b)
    x_nchw = a.permute(3, 2, 0, 1).contiguous()
    w_oihw = w.permute(3, 2, 0, 1).contiguous()
    want = torch.nn.functional.conv2d(x_nchw.double(), w_oihw.double(), padding=1)
    check(b.permute(3, 2, 0, 1), want, "conv2d")
    reps = max(5, repeat // 5)
    ours = kernel_time(kernel, (a, w, b), reps)
    peer = event_time(lambda: torch.nn.functional.conv2d(x_nchw, w_oihw, padding=1), reps)
    flops = 2.0 * batch * cout * cin * 9 * size * size
    # Winograd F(4x4, 3x3): four kernels per call, rounding differs from the direct sum's
    winograd = gpu_winograd.build(batch, cin, cout, size)
    b.fill_(float("nan"))
    winograd(a, w, b)
    check(b.permute(3, 2, 0, 1), want, "conv2d winograd", rtol=1e-4)
    fast = kernel_time(winograd, (a, w, b), reps)
    return [
        Row("conv2d TE shape fp32", ours, "cuDNN (autotuned)", peer, flops, "TFLOP/s"),
        Row("conv2d Winograd F(4x4,3x3)", fast, "cuDNN (autotuned)", peer, flops, "TFLOP/s"),
    ]


def _cudnn_conv_seconds(x, weight, reps: int) -> float:
    """cuDNN's 3x3 convolution of `x` by `weight` (padding 1) with channels_last tensors."""
    x_last = x.to(memory_format=torch.channels_last)
    w_last = weight.to(memory_format=torch.channels_last)
    return event_time(lambda: torch.nn.functional.conv2d(x_last, w_last, padding=1), reps)


def bench_conv2d_fp16(repeat: int) -> list[Row]:
    """TE's opt_conv_tensorcore shape (batch 256, 14x14, 256 -> 512 channels, 3x3, padding 1)
    in float16 on the tensor cores (`examples/gpu_conv2d_fp16.py`, TE's blocked layout, float32
    results), against cuDNN in float16 with channels_last tensors and ``cudnn.benchmark``."""
    torch.backends.cudnn.benchmark = True
    batch, size, cin, cout = 256, 14, 256, 512
    x = torch.randn(batch, cin, size, size, device="cuda").half()
    weight = torch.randn(cout, cin, 3, 3, device="cuda").half()
    # TE's layout: A[n, h, w, i, nn, ii] and W[kh, kw, i, o, ii, oo], blocks of 16
    a = x.reshape(batch // 16, 16, cin // 16, 16, size, size).permute(0, 4, 5, 2, 1, 3)
    w = weight.reshape(cout // 16, 16, cin // 16, 16, 3, 3).permute(4, 5, 2, 0, 3, 1)
    a, w = a.contiguous(), w.contiguous()
    out = torch.full((batch // 16, size, size, cout // 16, 16, 16), float("nan"), device="cuda")
    want = torch.nn.functional.conv2d(x.double(), weight.double(), padding=1)
    reps = max(5, repeat // 5)
    peer = _cudnn_conv_seconds(x, weight, reps)
    flops = 2.0 * batch * cout * cin * 9 * size * size
    rows = []
    for name, options in (("TE's schedule", {}), ("swizzled tiles", dict(swizzle=True))):
        kernel = gpu_conv2d_fp16.build(batch, size, size, cin, cout, **options)
        out.fill_(float("nan"))
        kernel(a, w, out)
        got = out.permute(0, 4, 3, 5, 1, 2).reshape(batch, cout, size, size)
        check(got, want, f"conv2d fp16, {name}", rtol=1e-5)
        ours = kernel_time(kernel, (a, w, out), reps)
        name = f"conv2d TE tensorcore shape fp16, {name}"
        rows.append(Row(name, ours, "cuDNN fp16 NHWC", peer, flops, "TFLOP/s"))
    return rows


def bench_conv2d_wgmma(repeat: int) -> list[Row]:
    """The same convolution as an implicit GEMM on the warpgroup tensor cores
    (`examples/gpu_conv2d_wgmma.py`: images and channels last, float16 results), against
    cuDNN in float16 with channels_last tensors and ``cudnn.benchmark``."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    variants = {
        "128x128 blocks, 3 stages": {},
        "128x256 blocks, 4 stages": dict(block_cols=256, stages=4),
        "256x128 blocks, 4 stages": dict(block_rows=256, stages=4),
        "tma, 128x128 blocks, 4 stages": dict(tma=True, stages=4),
        "tma, 128x256 blocks, 4 stages": dict(tma=True, block_cols=256, stages=4),
        "tma, 256x128 blocks, 4 stages": dict(tma=True, block_rows=256, stages=4),
        "tma, 128x256 blocks, 2 stages, k by 128": dict(
            tma=True, block_cols=256, stages=2, step=128
        ),
        "tma, 128x256 blocks, 4 stages, 2 runs of columns": dict(
            tma=True, block_cols=256, stages=4, runs=2
        ),
        "tma, 128x256 blocks, 4 stages, 7 runs of columns": dict(
            tma=True, block_cols=256, stages=4, runs=7
        ),
        "tma, 128x256 blocks, 4 stages, persistent": dict(
            tma=True, block_cols=256, stages=4, persistent=sms
        ),
        "tma, 256x128 blocks, 4 stages, persistent": dict(
            tma=True, block_rows=256, stages=4, persistent=sms
        ),
        "tma, 128x256 blocks, 4 stages, persistent, tma stores": dict(
            tma=True, block_cols=256, stages=4, persistent=sms, tma_store=True
        ),
    }
    return _conv2d_wgmma_rows(variants, repeat)


def _conv2d_wgmma_rows(variants: dict[str, dict], repeat: int) -> list[Row]:
    """TE's shape on the warpgroup tensor cores, one row per schedule of `variants`."""
    torch.backends.cudnn.benchmark = True
    batch, size, cin, cout = 256, 14, 256, 512
    x = torch.randn(batch, cin, size, size, device="cuda").half()
    weight = torch.randn(cout, cin, 3, 3, device="cuda").half()
    a = x.permute(2, 3, 0, 1).contiguous()  # A[h, w, n, c]
    w = weight.permute(2, 3, 1, 0).contiguous()  # W[kh, kw, c, o]
    out = torch.full((size, size, batch, cout), float("nan"), device="cuda").half()
    want = torch.nn.functional.conv2d(x.double(), weight.double(), padding=1)
    reps = max(5, repeat // 5)
    peer = _cudnn_conv_seconds(x, weight, reps)
    flops = 2.0 * batch * cout * cin * 9 * size * size
    rows = []
    for name, options in variants.items():
        kernel = gpu_conv2d_wgmma.build(size, size, batch, cin, cout, **options)
        out.fill_(float("nan"))
        kernel(a, w, out)
        check(out.permute(2, 3, 0, 1), want, f"conv2d wgmma, {name}", rtol=1e-2)
        ours = kernel_time(kernel, (a, w, out), reps)
        name = f"conv2d TE tensorcore shape fp16, wgmma, {name}"
        rows.append(Row(name, ours, "cuDNN fp16 NHWC", peer, flops, "TFLOP/s"))
    return rows


def bench_wgmma_stores(repeat: int) -> list[Row]:
    """Results stored from registers beside the same kernels storing them by the copy engine
    through shared memory (``store_matrix(tma=True)``): the convolution on persistent blocks
    and the GEMMs of `bench_gemm_wgmma`'s copy-engine rows."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    persistent = dict(tma=True, block_cols=256, stages=4, persistent=sms)
    rows = _conv2d_wgmma_rows(
        {
            "tma, 128x256 blocks, 4 stages, persistent": persistent,
            "same, stores by the copy engine": dict(persistent, tma_store=True),
            "tma, 128x256 blocks, 4 stages, stores by the copy engine": dict(
                tma=True, block_cols=256, stages=4, tma_store=True
            ),
        },
        repeat,
    )
    whole = dict(gpu_gemm_wgmma.FAST, persistent=sms)
    variants = {"copy engine": gpu_gemm_wgmma.FAST, "persistent": whole}
    sizes = [("float16", 4096), ("float16", 4000), ("float16", 8192), ("bfloat16", 4000)]
    for (dtype, n), (name, options), stores in itertools.product(
        sizes, variants.items(), (False, True)
    ):
        label = f"gemm {n}^3 {dtype} wgmma, {name}" + (", tma stores" if stores else "")
        rows.append(_gemm_wgmma_row(n, dtype, dict(options, tma_store=stores), label, repeat))
    return rows


def bench_compile(repeat: int) -> list[Row]:
    """Seconds from schedule to loaded kernel for the GEMM, each time at a new size so that no
    compile cache helps (the process's LLVM and CUDA are warm: the first build came before),
    and Triton's from a new jit function with empty caches to its first launch done
    (`triton_matmul`), in turn."""
    from benchmarks import triton_matmul

    del repeat
    ours, peer = [], []
    for k in range(3):
        n = 4096 + 128 * (k + 1)
        start = time.perf_counter()
        kernel = gpu_gemm.build(n, n, n)
        kernel.launch_config  # loads the module  # noqa: B018
        ours.append(time.perf_counter() - start)
        a, b = torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")
        peer.append(triton_matmul.compile_seconds(a, b, torch.empty(n, n, device="cuda")))
    show = lambda xs: ", ".join(f"{x * 1e3:.0f}" for x in xs)  # noqa: E731
    print(f"compile gemm, schedule to loaded module: {show(ours)} ms; Triton: {show(peer)} ms")
    ratio = statistics.median(peer) / statistics.median(ours)
    print(f"compile gemm, Triton / ours (medians): {ratio:.2f}x")
    half = []
    for k in range(3):
        n = 4096 + 128 * (k + 1)
        start = time.perf_counter()
        gpu_gemm_fp16.build(n, n, n, "float16", "float16").launch_config  # noqa: B018
        half.append(time.perf_counter() - start)
    print(f"compile fp16 tensor-core gemm, schedule to loaded module: {show(half)} ms")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    group = []
    for k in range(3):
        n = 4096 + 256 * (k + 1)
        options = dict(gpu_gemm_wgmma.FAST, persistent=sms)
        start = time.perf_counter()
        gpu_gemm_wgmma.build(n, n, n, "float16", "float16", **options).launch_config  # noqa: B018
        group.append(time.perf_counter() - start)
    print(f"compile fp16 wgmma gemm (FAST, persistent), to loaded module: {show(group)} ms")
    ours = [_fresh_process(_OURS_FRESH, 4096 + 128 * k) for k in range(3)]
    peer = [_fresh_process(_TRITON_FRESH, 4096 + 128 * k) for k in range(3)]
    print(f"compile gemm, first in a fresh process: {show(ours)} ms; Triton: {show(peer)} ms")
    ratio = statistics.median(peer) / statistics.median(ours)
    print(f"compile gemm, first in a fresh process, Triton / ours (medians): {ratio:.2f}x")
    return []


# The first kernel of a new process, imports excluded. schedlang's clock includes starting
# CUDA (`cuInit`, the context, the driver's first PTX compile); Triton's starts after torch has
# made the tensors and so the context, as a user's program would have.
_OURS_FRESH = """
import sys, time
from examples import gpu_gemm
n = int(sys.argv[1])
start = time.perf_counter()
gpu_gemm.build(n, n, n).launch_config  # loads the module
print(time.perf_counter() - start)
"""
_TRITON_FRESH = """
import sys, torch
from benchmarks import triton_matmul
n = int(sys.argv[1])
a, b, c = (torch.randn(n, n, device="cuda") for _ in range(3))
print(triton_matmul.compile_seconds(a, b, c))
"""


def _fresh_process(code: str, n: int) -> float:
    """Seconds `code` prints, run in a new Python process on size `n`."""
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, "-c", code, str(n)],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "CUDA_CACHE_DISABLE": "1"},  # the driver's own disk cache of JIT
    )
    return float(done.stdout.split()[-1])


BENCHMARKS = {
    "gemm": bench_gemm,
    "gemm_fp16": bench_gemm_fp16,
    "gemm_fp16_variants": bench_gemm_fp16_variants,
    "gemm_tf32": bench_gemm_tf32,
    "gemm_wgmma": bench_gemm_wgmma,
    "gemm_wgmma_variants": bench_gemm_wgmma_variants,
    "gemm_wgmma_tma": bench_gemm_wgmma_tma,
    "gemm_wgmma_persistent": bench_gemm_wgmma_persistent,
    "gemm_wgmma_edges": bench_gemm_wgmma_edges,
    "gemm_fp8": bench_gemm_fp8,
    "gemm_fp8_scaled": bench_gemm_fp8_scaled,
    "gemm_fp8_scaled_variants": bench_gemm_fp8_scaled_variants,
    "conv2d_fp16": bench_conv2d_fp16,
    "conv2d_wgmma": bench_conv2d_wgmma,
    "wgmma_stores": bench_wgmma_stores,
    "elementwise": bench_elementwise,
    "transpose": bench_transpose,
    "rows": bench_rows,
    "conv2d": bench_conv2d,
    "compile": bench_compile,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(BENCHMARKS))
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}")
    header = ["kernel", "ms", "rate", "peer", "peer ms", "peer rate", "unit", "peer/ours"]
    print("| " + " | ".join(header) + " |")
    print("|" + " --- |" * len(header))
    for name in args.only.split(","):
        for row in BENCHMARKS[name](args.repeat):
            print("| " + " | ".join(row.cells()) + " |", flush=True)


if __name__ == "__main__":
    main()
