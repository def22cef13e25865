"""The roofs a kernel's rates are measured against: peak arithmetic and memory bandwidth.

On a GPU they are the device's peaks, computed from the attributes its driver reports
(`runtime.cuda.peaks`). A CPU reports no such numbers that can be trusted (turbo clocks,
vector widths and memory channels are not visible from Python), so its roofs are *measured*:
numpy's matrix product (BLAS, all cores) as the arithmetic a well-tuned kernel reaches, and a
copy of an array larger than the caches as the bandwidth. `Ceilings.source` says which.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Ceilings:
    """Operations per second (None when unknown for the dtype) and bytes per second."""

    device: str
    flops: float | None
    bandwidth: float
    source: str

    def attainable(self, intensity: float) -> float | None:
        """The roofline's bound on operations per second at `intensity` FLOP per byte."""
        if self.flops is None:
            return None
        return min(self.flops, intensity * self.bandwidth)


def gpu_ceilings(dtype: str) -> Ceilings:
    """The GPU's peaks for `dtype` (see `runtime.cuda.peaks`)."""
    from ..runtime.cuda.peaks import device_peaks

    peaks = device_peaks()
    source = f"peaks from the driver's attributes of {peaks.name} ({peaks.arch})"
    return Ceilings(peaks.name, peaks.flops.get(dtype), peaks.bandwidth, source)


def cpu_ceilings(dtype: str, size: int = 1024, megabytes: int = 256) -> Ceilings:
    """Measured roofs of this CPU: numpy's `size`^3 matrix product in `dtype` (float32 or
    float64; other dtypes have no measured arithmetic roof) and a copy of `megabytes` MB."""
    import platform

    flops = None
    if dtype in ("float32", "float64"):
        a = np.ones((size, size), dtype)
        flops = 2.0 * size**3 / _best_seconds(lambda: a @ a)
    src = np.ones(megabytes * 2**20 // 8)
    dst = np.empty_like(src)
    bandwidth = 2.0 * src.nbytes / _best_seconds(lambda: np.copyto(dst, src))
    source = f"measured: numpy {size}^3 matmul ({dtype}) and a {megabytes} MB copy"
    return Ceilings(platform.processor() or platform.machine(), flops, bandwidth, source)


def _best_seconds(fn, runs: int = 5) -> float:
    fn()
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best
