"""The OpenCL device kernels run on: the first GPU pyopencl finds, else its first device of
any kind (pocl's CPU device, where it is installed). Chosen once per process, with one context
and one in-order queue, which orders a call's launches and copies as a CUDA stream does.

pyopencl is optional (``pip install schedlang[opencl]``): building OpenCL source needs
nothing, and a call where it or a device is missing is a `LaunchError` that says what to
install.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from ...errors import LaunchError

INSTALL = "pip install 'schedlang[opencl]' (pyopencl, and pocl for an OpenCL device on the CPU)"


@dataclass(frozen=True, eq=False)
class OpenCLDevice:
    cl: Any  # the pyopencl module
    context: Any
    queue: Any
    device: Any

    @property
    def name(self) -> str:
        return f"{self.device.name.strip()} ({self.device.platform.name.strip()})"


@functools.cache
def _find() -> OpenCLDevice | str:
    """The device, or why there is none."""
    try:
        import pyopencl as cl
    except ImportError:
        return f"pyopencl is not installed; {INSTALL}"
    try:
        devices = [d for p in cl.get_platforms() for d in p.get_devices()]
    except cl.Error as error:  # no ICD loader or no platform
        return f"pyopencl finds no OpenCL platform ({error}); {INSTALL}"
    if not devices:
        return f"pyopencl finds no OpenCL device; {INSTALL}"
    gpus = [d for d in devices if d.type & cl.device_type.GPU]
    device = (gpus or devices)[0]
    context = cl.Context([device])
    return OpenCLDevice(cl, context, cl.CommandQueue(context), device)


def opencl_device() -> OpenCLDevice:
    """The device, or a LaunchError saying why there is none."""
    found = _find()
    if isinstance(found, str):
        raise LaunchError(f"cannot run an OpenCL kernel: {found}")
    return found


def opencl_available() -> bool:
    return not isinstance(_find(), str)
