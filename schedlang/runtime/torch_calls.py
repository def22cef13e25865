"""A CUDA kernel's usual call with torch tensors: checked from what was worked out at build,
launched on torch's current stream, not waited for.

The general path (`cuda_arguments.place_arguments`) accepts every kind of array, and a call
then waits for the device, so that a host output can be copied back and an error reported at
the call. torch users expect what torch does: the kernel queued on the current stream (so that
it orders with the torch work around it, and a CUDA graph can capture it), the call returning
at once, a fault reported at the next synchronisation. The usual call is exact
``torch.Tensor``s of the parameters' dtypes on the kernel's GPU, C-contiguous, starting at a
multiple of 16 bytes, every dimension the constant or size it must be (the same analysis as the
CPU's guard, `fast_path.guard_spec`), outputs apart from the other arguments, sizes within the
index type; for it, a call reads a few tensor attributes, fills the kernel's parameter block
and calls ``cuLaunchKernel``. Anything else (numpy arrays, cupy, sizes passed by name, a
mismatch of any kind, another thread than the one that set the context up) returns False and
the call takes the general path, which says what is wrong: no check is lost.
"""

from __future__ import annotations

import ctypes
import math
import sys
import threading
from typing import Any

from ..codegen.cpu.trampoline import GuardSpec
from ..codegen.nvptx.plan import DevicePlan
from . import cuda_driver
from .cuda_arguments import ALIGN
from .cuda_launch import check_grid, grid_of
from .size_limits import SizeLimits


class TorchCall:
    """The usual torch call of one kernel (see the module); `launch` is None where a kernel's
    calls cannot take it (temporaries to allocate, a dtype torch lacks)."""

    def __init__(
        self,
        name: str,
        plan: DevicePlan,
        functions: list[Any],
        spec: GuardSpec,
        limits: SizeLimits,
        device: cuda_driver.Device,
    ) -> None:
        torch = sys.modules["torch"]
        self.name = name
        self.plan = plan
        self.functions = functions
        self.device = device
        self.limits = limits if limits.needed else None
        self.tensor = torch.Tensor
        self.stream = torch._C._cuda_getCurrentRawStream
        self.params = []
        for dtype, written, dims in spec.params:
            kind = getattr(torch, dtype.name, None)
            if not isinstance(kind, torch.dtype):
                raise _Unusual
            extents = tuple((value, size) for value, size in dims)
            self.params.append((kind, written, extents, len(extents), dtype.itemsize))
        self.sizes = len(spec.size_limits)
        self.sources = _sources(spec)
        self.thread = threading.get_ident()
        self.lock = threading.Lock()
        self.values = [ctypes.c_void_p(0) for _ in self.params]
        self.values += [ctypes.c_int64(0) for _ in range(self.sizes)]
        self.addresses = (ctypes.c_void_p * max(1, len(self.values)))(
            *(ctypes.addressof(v) for v in self.values)
        )
        self.block = ctypes.addressof(self.addresses)
        self.steps: dict[tuple[int, ...], list[tuple]] = {}
        self.cuda = cuda_driver.driver()
        self.success = self.cuda.CUresult.CUDA_SUCCESS

    @classmethod
    def make(cls, name, plan, functions, spec, limits, device) -> TorchCall | None:
        if spec is None or plan.temps or "torch" not in sys.modules:
            return None
        torch = sys.modules["torch"]
        if not hasattr(torch._C, "_cuda_getCurrentRawStream"):
            return None
        try:
            return cls(name, plan, functions, spec, limits, device)
        except _Unusual:
            return None

    def launch(self, arrays: tuple, stream: int | None = None) -> bool:
        """Queue the kernels for `arrays` on `stream` (None: torch's current one) and return
        True, or return False (the general path decides) where the call is not the usual one."""
        if len(arrays) != len(self.params) or threading.get_ident() != self.thread:
            return False
        ordinal = self.device.ordinal
        pointers, shapes = [], []
        for t, (kind, _, _, ndim, _) in zip(arrays, self.params):
            if type(t) is not self.tensor or t.dtype is not kind or t.get_device() != ordinal:
                return False
            shape = t.shape
            if len(shape) != ndim or not t.is_contiguous():
                return False
            ptr = t.data_ptr()
            if ptr % ALIGN:
                return False
            pointers.append(ptr)
            shapes.append(shape)
        values = [shapes[k][d] for k, d in self.sources]
        for shape, (_, _, extents, _, _) in zip(shapes, self.params):
            for d, (value, size) in enumerate(extents):
                if shape[d] != (value if size < 0 else values[size]):
                    return False
        ends = [p + math.prod(s) * param[4] for p, s, param in zip(pointers, shapes, self.params)]
        for k, (_, written, _, _, _) in enumerate(self.params):
            if written and ends[k] > pointers[k]:
                for j in range(len(pointers)):
                    if j != k and pointers[k] < ends[j] and pointers[j] < ends[k]:
                        return False
        if self.limits is not None:
            try:
                self.limits.check(values, arrays)
            except ValueError:
                return False
        steps = self.steps.get(tuple(values))
        if steps is None:
            steps = self._steps(values)
        if stream is None:
            stream = self.stream(ordinal)
        with self.lock:
            for value, p in zip(self.values, pointers):
                value.value = p
            for value, n in zip(self.values[len(pointers) :], values):
                value.value = n
            for function, grid, block, shared, what in steps:
                result = self.cuda.cuLaunchKernel(
                    function, *grid, *block, shared, stream, self.block, 0
                )
                if result[0] != self.success:
                    cuda_driver.check(result, what)
        return True

    def _steps(self, values: list[int]) -> list[tuple]:
        steps = []
        for kernel, function in zip(self.plan.kernels, self.functions):
            grid = grid_of(kernel, self.plan, values)
            check_grid(f"{self.name}/{kernel.name}", grid, self.device)
            if min(grid) <= 0:
                continue
            what = (
                f"launching kernel '{self.name}/{kernel.name}' (grid {grid}, block {kernel.block})"
            )
            steps.append((function, grid, kernel.block, kernel.dynamic_shared_bytes, what))
        if len(self.steps) < 64:  # a few shapes, not every shape a loop ever passes
            self.steps[tuple(values)] = steps
        return steps


class _Unusual(Exception):
    """A kernel whose calls always take the general path."""


def _sources(spec: GuardSpec) -> list[tuple[int, int]]:
    """For each size, the first (parameter, dimension) that shows it."""
    found: dict[int, tuple[int, int]] = {}
    for k, (_, _, dims) in enumerate(spec.params):
        for d, (_, size) in enumerate(dims):
            if size >= 0 and size not in found:
                found[size] = (k, d)
    return [found[size] for size in range(len(spec.size_limits))]
