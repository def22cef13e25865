"""Launching the kernels of a `DevicePlan`, in order, on one stream (`streams` says which).

A call is prepared once and then run: `prepare_launch` evaluates each kernel's grid from the
sizes, checks it against the device, allocates the plan's temporary global buffers and builds
the one parameter list (buffers, temporaries, sizes, host loop variables, and the tensor maps
of bulk copies made for these arrays: `tensor_maps`) that every kernel takes; a host loop (a
scan's steps, `nvptx.plan.HostLoop`) launches its kernels once per value, its variable set
before each launch (the driver copies the parameters when a kernel is queued); `Launch.run` then
only calls ``cuLaunchKernel`` for each kernel, so that `Kernel.time` can measure the kernels
alone and run them again without host work in between. The kernels of one call run one after
another on their stream. A kernel whose grid is empty (a size of zero) is skipped. A kernel
with more than 48 KB of shared memory has it as dynamic shared memory (`nvptx.nvvm`), which
each launch passes and which the kernel opted into when it was loaded. The block shape and
shared memory are checked against the device before anything launches, so an impossible
schedule is a `LaunchError` that says what to change rather than the driver's
``CUDA_ERROR_INVALID_VALUE`` (`check_block` runs before the module is even loaded).
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...codegen.nvptx.plan import DevicePlan, HostLoop, KernelPlan
from ...codegen.nvptx.shared_layout import STATIC_SHARED_LIMIT
from ...errors import LaunchError
from ...ir.evaluate import _size_value
from ...ir.printer import expr_str
from ..device_array import DeviceArray
from ..tensor_maps import encode
from . import driver
from .driver import Device


@dataclass(frozen=True)
class LaunchConfig:
    """How one kernel launches: `grid` as expressions of the sizes, the rest constants;
    `shared_bytes` per block (`dynamic_shared` when they are passed at launch, above 48 KB);
    `registers` per thread once the module is loaded on a GPU (None before)."""

    kernel: str
    grid: tuple[str, str, str]
    block: tuple[int, int, int]
    shared_bytes: int
    registers: int | None
    dynamic_shared: bool


def grid_of(kernel: KernelPlan, plan: DevicePlan, sizes: Sequence[int]) -> tuple[int, int, int]:
    """`kernel`'s grid for the size values `sizes` (in `plan.func.sizes` order)."""
    return _grid(kernel, dict(zip(plan.func.sizes, sizes)))


def _grid(kernel: KernelPlan, bound: dict) -> tuple[int, int, int]:
    x, y, z = (int(_size_value(e, bound)) for e in kernel.grid)
    return x, y, z


def check_block(kernel: KernelPlan, function: str, device: Device) -> None:
    """A LaunchError when `device` cannot run a block of `kernel`, naming the limit. (Checked
    before the module is loaded: the driver's compiler rejects too much shared memory with a
    message about PTX.)"""
    threads = kernel.block[0] * kernel.block[1] * kernel.block[2]
    if threads > device.max_threads:
        raise LaunchError(
            f"kernel '{function}' needs {threads} threads per block {kernel.block}, but "
            f"{device.name} runs at most {device.max_threads}; split the loops bound to "
            "threadIdx by smaller factors"
        )
    for axis, n, limit in zip("xyz", kernel.block, device.max_block):
        if n > limit:
            raise LaunchError(
                f"kernel '{function}' has {n} threads along threadIdx.{axis}, but {device.name} "
                f"allows at most {limit}; bind a smaller loop to it"
            )
    limit = device.max_shared_optin if kernel.shared.dynamic else device.max_shared
    if kernel.shared_bytes > limit:
        raise LaunchError(
            f"kernel '{function}' needs {kernel.shared_bytes} bytes of shared memory per block, "
            f"but {device.name} gives a block at most {limit} (opting in above "
            f"{STATIC_SHARED_LIMIT}); stage smaller tiles in shared memory: split the loops "
            "that the shared stages are computed at by smaller factors"
        )


def check_grid(function: str, grid: tuple[int, int, int], device: Device) -> None:
    for axis, n, limit in zip("xyz", grid, device.max_grid):
        if n > limit:
            raise LaunchError(
                f"kernel '{function}' has {n} blocks along blockIdx.{axis}, but {device.name} "
                f"allows at most {limit}; bind the larger loop to blockIdx.x"
            )


@dataclass(frozen=True)
class _Step:
    """One kernel launch of a prepared call (`what` names it in the driver's errors)."""

    function: Any
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int
    what: str
    sets: tuple[tuple[ctypes.c_int64, int], ...] = ()  # host loop variables' values for it


class Launch:
    """The kernels of one call, ready to run as often as wanted; holds the temporaries and the
    parameter list, which must live until the kernels are done."""

    def __init__(self, steps: list[_Step], values: list, temps: list[DeviceArray]) -> None:
        self._steps = steps
        self._values = values
        self._temps = temps
        self._addresses = (ctypes.c_void_p * max(1, len(values)))(
            *(ctypes.addressof(v) for v in values)
        )
        self._params = ctypes.addressof(self._addresses)

    def run(self, stream: int = 0) -> None:
        """Queue every kernel on `stream` (nothing else: no allocation, no argument building)."""
        cuda = driver.driver()
        for step in self._steps:
            for slot, value in step.sets:  # the driver copies the parameters at each launch
                slot.value = value
            launched = cuda.cuLaunchKernel(
                step.function, *step.grid, *step.block, step.shared_bytes, stream, self._params, 0
            )
            driver.check(launched, step.what)


def prepare_launch(
    name: str,
    plan: DevicePlan,
    functions: Sequence[Any],
    pointers: Sequence[int],
    sizes: Sequence[int],
    device: Device,
) -> Launch:
    """Everything the kernels of `plan` need for one call, checked and allocated."""
    slots = {v: ctypes.c_int64(0) for v in plan.loop_vars}
    steps: list[_Step] = []

    def launches(program, bound: dict, sets: tuple) -> None:
        for item in program:
            if isinstance(item, HostLoop):  # the host runs it: one launch per value
                first = int(_size_value(item.min, bound))
                for value in range(first, first + int(_size_value(item.extent, bound))):
                    inner = {**bound, item.var: value}
                    launches(item.body, inner, (*sets, (slots[item.var], value)))
                continue
            kernel, function = plan.kernels[item], functions[item]
            grid = _grid(kernel, bound)
            check_grid(f"{name}/{kernel.name}", grid, device)
            if min(grid) <= 0:
                continue
            what = f"launching kernel '{name}/{kernel.name}' (grid {grid}, block {kernel.block})"
            shared = kernel.dynamic_shared_bytes
            steps.append(_Step(function, grid, kernel.block, shared, what, sets))

    launches(plan.program or range(len(plan.kernels)), dict(zip(plan.func.sizes, sizes)), ())
    temps = [DeviceArray((temp_count(b, plan, sizes),), b.dtype) for b in plan.temps]
    values: list = [ctypes.c_void_p(p) for p in pointers]
    values += [ctypes.c_void_p(t.ptr) for t in temps]
    values += [ctypes.c_int64(n) for n in sizes]
    values += list(slots.values())
    if plan.tensor_maps:  # after the sizes, by value (`codegen.nvptx.module`)
        values += encode(plan, [*pointers, *(t.ptr for t in temps)], sizes)
    return Launch(steps, values, temps)


def temp_count(buffer, plan: DevicePlan, sizes: Sequence[int]) -> int:
    """The elements of temporary `buffer` at the call's `sizes` (its strides' reach)."""
    bound = dict(zip(plan.func.sizes, sizes))
    shape = [max(0, int(_size_value(e, bound))) for e in buffer.shape]
    if buffer.strides is None:
        count = 1
        for n in shape:
            count *= n
        return count
    strides = [int(_size_value(e, bound)) for e in buffer.strides]
    return max((n * s for n, s in zip(shape, strides)), default=1)


def describe_grid(kernel: KernelPlan) -> tuple[str, str, str]:
    x, y, z = (expr_str(e) for e in kernel.grid)
    return x, y, z
