"""The cuda half of ``schedlang demo``: TE's GPU matmul schedules, one idea per step.

- *naive*: one thread per element of C, blocks of 16x16 threads, A and B read from global
  memory for every multiply.
- *shared tiles*: each block stages a 16x16 tile of A and of B in shared memory per step of k
  (``cache_read(..., "shared")`` computed at the k loop, the copy spread over the threads), and
  each thread accumulates in a register (``cache_write(C, "local")``).
- *register tiles*: 64x64 block tiles over 16x16 threads, each thread a 4x4 tile of C held in
  registers (unrolled), so each value read from shared memory feeds four multiplies.
- *virtual threads*: TE's ``cuda_gemm_square`` recipe: 64x64 tiles over 8x8 threads, each
  thread 2x2 virtual threads of 4x4 outputs (interleaved, so the threads of a warp read
  neighbouring shared-memory words), operands staged again in registers per k step.

The sizes are constants (each run compiles for its size). Each kernel is checked against the
numpy reference on a NaN-filled output and timed with CUDA events on device arrays; torch's
matmul (cuBLAS, TF32 off, so also IEEE float32) is the yardstick when torch is importable.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from . import array, build, create_schedule, thread_axis
from .demo import matmul
from .ir.tensor import Tensor
from .schedule.schedule import Schedule

Scheduler = Callable[[Schedule, Tensor, Tensor, Tensor], None]


@dataclass(frozen=True)
class GpuStep:
    name: str
    schedule: Scheduler


def _bind(s: Schedule, t: Tensor, *pairs) -> None:
    for axis, tag in pairs:
        s[t].bind(axis, thread_axis(tag))


def _naive(s: Schedule, a: Tensor, b: Tensor, c: Tensor) -> None:
    by, bx, ty, tx = s[c].tile(c.op.axis[0], c.op.axis[1], 16, 16)
    _bind(s, c, (by, "blockIdx.y"), (bx, "blockIdx.x"), (ty, "threadIdx.y"), (tx, "threadIdx.x"))


def _shared_tiles(s: Schedule, a: Tensor, b: Tensor, c: Tensor) -> None:
    aa = s.cache_read(a, "shared", [c])
    bb = s.cache_read(b, "shared", [c])
    cl = s.cache_write(c, "local")
    by, bx, ty, tx = s[c].tile(c.op.axis[0], c.op.axis[1], 16, 16)
    _bind(s, c, (by, "blockIdx.y"), (bx, "blockIdx.x"), (ty, "threadIdx.y"), (tx, "threadIdx.x"))
    s[cl].compute_at(s[c], tx)
    ko, _ = s[cl].split(s[cl].op.reduce_axis[0], factor=16)
    for cache in (aa, bb):
        s[cache].compute_at(s[cl], ko)
        y, x = s[cache].op.axis
        _bind(s, cache, (y, "threadIdx.y"), (x, "threadIdx.x"))


def _register_tiles(s: Schedule, a: Tensor, b: Tensor, c: Tensor) -> None:
    aa = s.cache_read(a, "shared", [c])
    bb = s.cache_read(b, "shared", [c])
    cl = s.cache_write(c, "local")
    by, bx, yi, xi = s[c].tile(c.op.axis[0], c.op.axis[1], 64, 64)
    ty, yi = s[c].split(yi, nparts=16)
    tx, xi = s[c].split(xi, nparts=16)
    s[c].reorder(by, bx, ty, tx, yi, xi)
    _bind(s, c, (by, "blockIdx.y"), (bx, "blockIdx.x"), (ty, "threadIdx.y"), (tx, "threadIdx.x"))
    s[cl].compute_at(s[c], tx)
    yc, xc = s[cl].op.axis
    ko, ki = s[cl].split(s[cl].op.reduce_axis[0], factor=8)
    s[cl].reorder(ko, ki, yc, xc)
    s[cl].unroll(yc)
    s[cl].unroll(xc)
    for cache in (aa, bb):
        s[cache].compute_at(s[cl], ko)
        fused = s[cache].fuse(*s[cache].op.axis)
        _, lanes = s[cache].split(fused, factor=256)  # consecutive threads, consecutive words
        fy, fx = s[cache].split(lanes, nparts=16)
        _bind(s, cache, (fy, "threadIdx.y"), (fx, "threadIdx.x"))


def te_gpu_gemm(
    s: Schedule, a: Tensor, b: Tensor, c: Tensor, num_thread=8, scale=4, vt=2, kf=8
) -> None:
    """TE's ``cuda_gemm_square`` recipe: blocks of ``scale * num_thread * vt`` squared, shared
    tiles of A and B per `kf` steps of k, operands staged again in registers, `vt` x `vt`
    virtual threads per thread, each of ``scale`` x ``scale`` outputs."""
    aa = s.cache_read(a, "shared", [c])
    bb = s.cache_read(b, "shared", [c])
    al = s.cache_read(aa, "local", [c])
    bl = s.cache_read(bb, "local", [c])
    cc = s.cache_write(c, "local")
    block = scale * num_thread * vt
    by, yi = s[c].split(c.op.axis[0], factor=block)
    bx, xi = s[c].split(c.op.axis[1], factor=block)
    s[c].reorder(by, bx, yi, xi)
    tyz, yi = s[c].split(yi, nparts=vt)
    ty, yi = s[c].split(yi, nparts=num_thread)
    txz, xi = s[c].split(xi, nparts=vt)
    tx, xi = s[c].split(xi, nparts=num_thread)
    _bind(s, c, (by, "blockIdx.y"), (bx, "blockIdx.x"), (tyz, "vthread"), (txz, "vthread"))
    _bind(s, c, (ty, "threadIdx.y"), (tx, "threadIdx.x"))
    s[c].reorder(tyz, txz, ty, tx, yi, xi)
    s[cc].compute_at(s[c], tx)
    ko, ki = s[cc].split(s[cc].op.reduce_axis[0], factor=kf)
    kt, ki = s[cc].split(ki, factor=1)
    s[cc].reorder(ko, kt, ki, *s[cc].op.axis)
    s[aa].compute_at(s[cc], ko)
    s[bb].compute_at(s[cc], ko)
    s[cc].unroll(kt)
    s[al].compute_at(s[cc], kt)
    s[bl].compute_at(s[cc], kt)
    for cache in (aa, bb):
        fy, rest = s[cache].split(s[cache].op.axis[0], nparts=num_thread)
        _, rest = s[cache].split(s[cache].op.axis[1], factor=num_thread * 4)
        fx, rest = s[cache].split(rest, nparts=num_thread)
        _bind(s, cache, (fy, "threadIdx.y"), (fx, "threadIdx.x"))


GPU_STEPS: list[GpuStep] = [
    GpuStep("naive (16x16 threads)", _naive),
    GpuStep("+ shared tiles (16x16, k by 16)", _shared_tiles),
    GpuStep("+ register tiles (4x4 per thread)", _register_tiles),
    GpuStep("+ virtual threads (TE's recipe)", te_gpu_gemm),
]


def run_cuda(
    size: int, a_np: np.ndarray, b_np: np.ndarray, expected: np.ndarray, show_loops: bool
) -> list:
    """A `demo.Row` per step and for torch (times from CUDA events: no spread to show);
    prints each loop nest if asked."""
    from .demo import Row

    a_dev, b_dev = array(a_np), array(b_np)
    rows = []
    for step in GPU_STEPS:
        a, b, c, _ = matmul(size, size, size, packed=False)
        s = create_schedule(c)
        step.schedule(s, a, b, c)
        kernel = build(s, [a, b, c], target="cuda")
        if show_loops:
            print(f"# {step.name}\n{kernel.lowered}\n")
        out = array(np.full((size, size), np.nan, np.float32))
        kernel(a_dev, b_dev, out)
        good = bool(np.allclose(out.numpy(), expected, rtol=1e-3, atol=1e-3))
        seconds = kernel.time(a_dev, b_dev, out, repeat=_repeats(size), warmup=2)
        rows.append(Row(step.name, seconds, "yes" if good else "NO"))
    torch_seconds = _torch_seconds(a_np, b_np, _repeats(size))
    if torch_seconds is not None:
        rows.append(Row("torch matmul (cuBLAS, TF32 off; yardstick)", torch_seconds, "-"))
    return rows


def _repeats(size: int) -> int:
    return 20 if size >= 1024 else 50


def _torch_seconds(a_np: np.ndarray, b_np: np.ndarray, repeat: int) -> float | None:
    """Median seconds of torch's float32 matmul on the GPU, or None without torch or its GPU."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    torch.backends.cuda.matmul.allow_tf32 = False
    a, b = torch.from_numpy(a_np).cuda(), torch.from_numpy(b_np).cuda()
    for _ in range(2):
        torch.matmul(a, b)
    samples = []
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.matmul(a, b)
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) / 1e3)
    return float(np.median(samples))
