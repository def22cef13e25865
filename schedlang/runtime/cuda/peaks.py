"""The peak rates of the GPU, from what its driver reports.

Peak arithmetic is ``multiprocessors x lanes per multiprocessor x 2 (a fused multiply-add) x
clock``, with the lanes per multiprocessor of each architecture from NVIDIA's CUDA
programming guide (throughput of native arithmetic instructions; tensor cores not counted,
since schedlang's kernels do not use them). Peak memory bandwidth is ``2 (double data rate) x
memory clock x bus width``. On an H100 SXM (132 multiprocessors at 1.98 GHz, 5120-bit HBM3 at
2.62 GHz) these give the datasheet's 67 TFLOP/s float32, 34 TFLOP/s float64 and 3.35 TB/s.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import driver

# Arithmetic lanes per multiprocessor for (float32, float64), by compute capability.
LANES = {
    (7, 0): (64, 32),
    (7, 5): (64, 2),
    (8, 0): (64, 32),
    (8, 6): (128, 2),
    (8, 7): (128, 2),
    (8, 9): (128, 2),
    (9, 0): (128, 64),
}


@dataclass(frozen=True)
class GpuPeaks:
    """Peak rates of one GPU: operations per second by dtype (None where its architecture is
    not in `LANES`) and bytes per second of device memory; with its multiprocessors, the
    number of blocks a persistent schedule gives it (one each)."""

    name: str
    arch: str
    flops: dict[str, float | None]
    bandwidth: float
    multiprocessors: int


def peaks_from_attributes(
    name: str,
    capability: tuple[int, int],
    multiprocessors: int,
    clock_khz: int,
    memory_clock_khz: int,
    bus_bits: int,
) -> GpuPeaks:
    """The peaks of a GPU with these driver attributes (see the module docstring)."""
    lanes = LANES.get(capability)
    flops: dict[str, float | None] = {"float32": None, "float64": None}
    if lanes is not None:
        for dtype, per_sm in zip(("float32", "float64"), lanes):
            flops[dtype] = multiprocessors * per_sm * 2 * clock_khz * 1e3
    bandwidth = 2 * memory_clock_khz * 1e3 * bus_bits / 8
    arch = f"sm_{capability[0]}{capability[1]}"
    return GpuPeaks(name, arch, flops, bandwidth, multiprocessors)


def device_peaks() -> GpuPeaks:
    """The peaks of the GPU kernels run on (the first device)."""
    device = driver.device()
    cuda = driver.driver()
    attr = cuda.CUdevice_attribute

    def get(name: str) -> int:
        value = cuda.cuDeviceGetAttribute(
            getattr(attr, f"CU_DEVICE_ATTRIBUTE_{name}"), device.handle
        )
        return int(driver.check(value, f"cuDeviceGetAttribute({name})"))

    capability = (get("COMPUTE_CAPABILITY_MAJOR"), get("COMPUTE_CAPABILITY_MINOR"))
    return peaks_from_attributes(
        device.name,
        capability,
        get("MULTIPROCESSOR_COUNT"),
        get("CLOCK_RATE"),
        get("MEMORY_CLOCK_RATE"),
        get("GLOBAL_MEMORY_BUS_WIDTH"),
    )
