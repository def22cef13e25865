"""A CUDA kernel's usual call with torch tensors, cupy arrays or ``sl`` device arrays: checked
from what was worked out at build, launched on the caller's stream.

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

from ..codegen.nvptx.plan import DevicePlan
from . import cuda_driver
from .cuda_arguments import ALIGN
from .cuda_launch import check_grid, grid_of
from .device_array import DeviceArray
from .fast_path import GuardSpec
from .size_limits import SizeLimits
from .streams import torch_stream


class UsualCall:
    """The usual call of one kernel (see the module); `make` gives None where a kernel's calls
    cannot take it (temporaries to allocate)."""

    def __init__(
        self,
        name: str,
        plan: DevicePlan,
        functions: list[Any],
        spec: GuardSpec,
        limits: SizeLimits,
        device: cuda_driver.Device,
    ) -> None:
        self.name = name
        self.plan = plan
        self.functions = functions
        self.device = device
        self.limits = limits if limits.needed else None
        self.params = []
        for dtype, written, dims in spec.params:
            extents = tuple((value, size) for value, size in dims)
            self.params.append((dtype, written, extents, len(extents), dtype.itemsize))
        self.tensor = None  # torch's, once torch is imported (`_torch_ready`)
        self.torch_stream = None
        self.torch_dtypes: list = []
        self.sizes = len(spec.size_limits)
        self.sources = spec.sources()
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
    def make(cls, name, plan, functions, spec, limits, device) -> UsualCall | None:
        if spec is None or plan.temps:
            return None
        return cls(name, plan, functions, spec, limits, device)

    def launch(self, arrays: tuple, stream: int | None = None) -> bool:
        """Queue the kernels for `arrays` on `stream` (None: the caller's, `streams`) and
        return True, or return False (the general path decides) where the call is not the
        usual one."""
        if len(arrays) != len(self.params) or not arrays or threading.get_ident() != self.thread:
            return False
        kind = type(arrays[0])
        if self.tensor is None and "torch" in sys.modules:
            self._torch_ready()
        if kind is self.tensor:
            read = self._torch(arrays)
        elif kind is DeviceArray:
            read = self._sl(arrays)
        elif kind.__name__ == "ndarray" and kind.__module__.startswith("cupy"):
            read = self._cupy(arrays)
        else:
            return False
        if read is None:
            return False
        pointers, shapes, current = read
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
        wait = stream is None and current is None  # sl arrays: the legacy stream, and a wait
        if stream is None:
            stream = 0 if current is None else current()
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
        if wait:
            synced = self.cuda.cuStreamSynchronize(0)
            cuda_driver.check(synced, f"kernel '{self.name}' failed while running")
        return True

    def _torch_ready(self) -> None:
        torch = sys.modules["torch"]
        self.torch_stream = torch_stream(torch)
        for dtype, *_ in self.params:
            kind = getattr(torch, dtype.name, None)
            self.torch_dtypes.append(kind if isinstance(kind, torch.dtype) else None)
        self.tensor = torch.Tensor

    def _torch(self, arrays: tuple):
        """Pointers, shapes and the current stream of torch tensors, or None."""
        ordinal = self.device.ordinal
        pointers, shapes = [], []
        for t, kind in zip(arrays, self.torch_dtypes):
            if type(t) is not self.tensor or t.dtype is not kind or t.get_device() != ordinal:
                return None
            if not t.is_contiguous():
                return None
            ptr = t.data_ptr()
            if ptr % ALIGN:
                return None
            pointers.append(ptr)
            shapes.append(t.shape)
        if any(len(s) != p[3] for s, p in zip(shapes, self.params)):
            return None
        return pointers, shapes, lambda: self.torch_stream(ordinal)

    def _cupy(self, arrays: tuple):
        """Pointers, shapes and the current stream of cupy arrays, or None."""
        cupy = sys.modules["cupy"]
        ordinal = self.device.ordinal
        pointers, shapes = [], []
        for a, (dtype, _, _, ndim, _) in zip(arrays, self.params):
            if type(a) is not cupy.ndarray or a.dtype is not dtype or a.ndim != ndim:
                return None
            if a.device.id != ordinal or not a.flags.c_contiguous:
                return None
            ptr = a.data.ptr
            if ptr % ALIGN:
                return None
            pointers.append(ptr)
            shapes.append(a.shape)
        return pointers, shapes, lambda: cupy.cuda.get_current_stream().ptr

    def _sl(self, arrays: tuple):
        """Pointers and shapes of ``sl`` device arrays (the legacy stream: None), or None."""
        pointers, shapes = [], []
        for a, (dtype, _, _, ndim, _) in zip(arrays, self.params):
            if type(a) is not DeviceArray or a.device != "cuda" or a.dtype != dtype:
                return None
            if len(a.shape) != ndim or not a.ptr or a.ptr % ALIGN:
                return None
            pointers.append(a.ptr)
            shapes.append(a.shape)
        return pointers, shapes, None

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
