"""The OpenCL device kernels run on (`platform_info.opencl_choice`: the first GPU pyopencl
finds, else its first device, pocl's CPU device where it is installed), with one context and
one in-order queue, which orders a call's launches and copies as a CUDA stream does; made once
per process.

pyopencl is optional (``pip install schedlang[opencl]``): building OpenCL source needs
nothing, and a call where it or a device is missing is a `LaunchError` that says what to
install.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from ...errors import LaunchError
from ...platform_info import opencl_choice


@dataclass(frozen=True, eq=False)
class OpenCLDevice:
    cl: Any  # the pyopencl module
    context: Any
    queue: Any
    device: Any
    name: str


@functools.cache
def opencl_device() -> OpenCLDevice:
    """The device, or a LaunchError saying why there is none."""
    device, detail = opencl_choice()
    if device is None:
        raise LaunchError(f"cannot run an OpenCL kernel: {detail}")
    import pyopencl as cl

    context = cl.Context([device])
    return OpenCLDevice(cl, context, cl.CommandQueue(context), device, detail)


def opencl_available() -> bool:
    return opencl_choice()[0] is not None
