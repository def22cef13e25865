"""``tvm.nd``: arrays on a device."""

from __future__ import annotations

import numpy as np

from ..errors import LaunchError
from ..runtime.device_array import DeviceArray
from .runtime import OPENCL, NDArray, cpu
from .runtime import Device as _Device


def array(data: object, device: _Device | None = None) -> NDArray:
    """`data` copied to `device` (the CPU by default)."""
    dev = cpu(0) if device is None else device
    values = data.numpy() if isinstance(data, NDArray) else np.asarray(data)
    return NDArray(_place(np.asarray(values, order="C"), dev), dev)  # 0-d stays 0-d


def empty(shape: object, dtype: str = "float32", device: _Device | None = None) -> NDArray:
    """An uninitialised array of `shape` and `dtype` on `device` (the CPU by default)."""
    dev = cpu(0) if device is None else device
    dims = (shape,) if isinstance(shape, int) else tuple(int(n) for n in shape)
    if dev.device_type == 2:
        _usable(dev)
        return NDArray(DeviceArray(dims, np.dtype(dtype)), dev)
    if dev.device_type == OPENCL:
        _usable(dev)
    return NDArray(np.empty(dims, np.dtype(dtype)), dev)


def _place(values: np.ndarray, dev: _Device) -> np.ndarray | DeviceArray:
    """Host memory for the CPU and for OpenCL (whose kernels copy their arrays in and out),
    device memory for CUDA."""
    if dev.device_type == OPENCL:
        _usable(dev)
    if dev.device_type in (1, OPENCL):
        return values.copy()
    _usable(dev)
    out = DeviceArray(values.shape, values.dtype)
    out.copy_from_host(values)
    return out


def _usable(dev: _Device) -> None:
    if not dev.exist:
        raise LaunchError(
            f"device {dev!r} is not available here; schedlang runs on cpu(0), cuda(0) and "
            "opencl(0) (with pyopencl and an OpenCL device)"
        )
