"""`OpenCLKernel`: a schedule compiled to OpenCL C, called like the CPU `Kernel`.

Building needs no device and no pyopencl: the source is written by the code generator and can
be read (`source`). The device is touched on the first call, which builds the program (with
correctly rounded float division and square root where the device has them). A call
checks its arrays as a CPU call does (`arguments`), copies them into device buffers,
allocates the plan's temporaries, launches the kernels in order on one in-order queue (a host
loop's kernels once per value of its variable), each over ``grid * block`` work-items in
work-groups of ``block``, and copies the outputs back.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from ...codegen.nvptx.plan import DevicePlan, HostLoop
from ...codegen.opencl.source import OpenCLProgram
from ...errors import LaunchError, entry_point
from ...ir import dtype as dt
from ...ir.evaluate import _size_value
from ...loopir.core.nodes import LoweredFunc
from ..arguments import check_arguments, written_params
from ..outputs import OutputPlan
from ..scalars import ScalarArguments
from ..size_limits import SizeLimits
from .device import OpenCLDevice, opencl_device


class OpenCLKernel:
    """A lowered function compiled to OpenCL C.

    ``kernel(*arrays, **sizes)`` takes numpy arrays in `args` order (copied to the device and
    the outputs back), or the inputs alone (the outputs are made and returned).
    """

    def __init__(self, lowered: LoweredFunc, program: OpenCLProgram, target: str) -> None:
        self.lowered = lowered
        self.target = target
        self.program = program
        self.written = written_params(lowered)  # per parameter: whether it is an output
        self._limits = SizeLimits(lowered)
        self._built = None  # the pyopencl kernels, in plan order, after the first call
        self.output_plan = OutputPlan(lowered, self.written)
        self._scalars = ScalarArguments(lowered, self.written, self.output_plan.inputs)

    @property
    def source(self) -> str:
        """The OpenCL C program: every kernel, in launch order."""
        return self.program.source

    @property
    def plan(self) -> DevicePlan:
        return self.program.plan

    def export(self, path) -> None:
        """Save the kernel to `path` for `sl.load` in another process (`runtime.saved`)."""
        from ..saved import export

        export(self, path)

    @entry_point(also=(TypeError, ValueError), deep=False)
    def __call__(self, *arrays: object, **sizes: int) -> object:
        arrays = self._scalars.arrays(arrays)
        completed = self.output_plan.complete(arrays, sizes)
        if completed is not None:  # inputs alone: the outputs are made and returned
            full, made = completed
            self(*full, **sizes)
            return made[0] if len(made) == 1 else made
        call = check_arguments(self.lowered, self.written, arrays, sizes, self._limits)
        device = opencl_device()
        run = _Run(self, device, call.arrays, list(call.sizes)[: len(self.lowered.sizes)])
        run.launch()
        run.finish()
        return None

    @entry_point(also=(TypeError, ValueError), deep=False)
    def time(self, *arrays: object, repeat: int = 10, warmup: int = 1, **sizes: int) -> float:
        """Median seconds of the kernels of one call over `repeat` runs after `warmup`, the
        arrays copied to the device once, before them."""
        if repeat < 1 or warmup < 0:
            raise ValueError(f"need repeat >= 1 and warmup >= 0, got {repeat} and {warmup}")
        arrays = self._scalars.arrays(arrays)
        call = check_arguments(self.lowered, self.written, arrays, sizes, self._limits)
        device = opencl_device()
        run = _Run(self, device, call.arrays, list(call.sizes)[: len(self.lowered.sizes)])
        for _ in range(warmup):
            run.launch()
        device.queue.finish()
        samples = []
        for _ in range(repeat):
            start = time.perf_counter()
            run.launch()
            device.queue.finish()
            samples.append(time.perf_counter() - start)
        run.finish()
        return statistics.median(samples)

    def kernels(self, device: OpenCLDevice) -> list:
        """The program's kernels built for `device` (once)."""
        if self._built is None:
            self._check_blocks(device)
            cl = device.cl
            try:
                built = cl.Program(device.context, self.source).build(options=_options(device))
            except cl.Error as error:
                raise LaunchError(
                    f"the OpenCL compiler of {device.name} refused the program of kernel "
                    f"'{self.lowered.name}':\n{error}"
                ) from None
            self._built = [getattr(built, k.name) for k in self.plan.kernels]
        return self._built

    def _check_blocks(self, device: OpenCLDevice) -> None:
        limit = device.device.max_work_group_size
        local_bytes = device.device.local_mem_size
        for k in self.plan.kernels:
            threads = k.block[0] * k.block[1] * k.block[2]
            if threads > limit:
                raise LaunchError(
                    f"kernel '{self.lowered.name}/{k.name}' needs work-groups of {threads} "
                    f"work-items {k.block}, but {device.name} runs at most {limit}; split the "
                    "loops bound to threadIdx by smaller factors"
                )
            if k.shared_bytes > local_bytes:
                raise LaunchError(
                    f"kernel '{self.lowered.name}/{k.name}' needs {k.shared_bytes} bytes of "
                    f"local (shared) memory, but {device.name} has {local_bytes}; stage smaller "
                    "tiles in shared memory"
                )

    def __repr__(self) -> str:
        params = ", ".join(f"{b.name}: {b.dtype}[{len(b.shape)}d]" for b in self.lowered.params)
        return f"<OpenCLKernel {self.lowered.name}({params}) target={self.target}>"


class _Run:
    """One call's device buffers and launches."""

    def __init__(self, kernel: OpenCLKernel, device: OpenCLDevice, arrays, sizes: list[int]):
        cl = device.cl
        self._device, self._kernel, self._arrays = device, kernel, arrays
        self._functions = kernel.kernels(device)
        plan = kernel.plan
        flags = cl.mem_flags
        self._buffers = [_buffer(cl, device, flags, a) for a in arrays]
        bound = dict(zip(plan.func.sizes, sizes))
        for temp in plan.temps:
            count = int(np.prod([_size_value(e, bound) for e in temp.shape]))
            nbytes = max(1, count * dt.itemsize(temp.dtype))
            self._buffers.append(cl.Buffer(device.context, flags.READ_WRITE, nbytes))
        self._bound = bound
        self._sizes = [np.array(v, dt.to_numpy(var.dtype)) for var, v in bound.items()]

    def launch(self) -> None:
        self._program(self._kernel.plan.program, {})

    def _program(self, program: tuple, loops: dict) -> None:
        plan = self._kernel.plan
        for step in program:
            if isinstance(step, HostLoop):
                start = _size_value(step.min, {**self._bound, **loops})
                extent = _size_value(step.extent, {**self._bound, **loops})
                for value in range(start, start + extent):
                    self._program(step.body, {**loops, step.var: value})
                continue
            kernel = plan.kernels[step]
            bound = {**self._bound, **loops}
            grid = [int(_size_value(e, bound)) for e in kernel.grid]
            if min(grid) <= 0:
                continue  # an empty grid: a size of zero
            values = [np.array(loops.get(v, 0), dt.to_numpy(v.dtype)) for v in plan.loop_vars]
            function = self._functions[step]
            function.set_args(*self._buffers, *self._sizes, *values)
            size = tuple(g * b for g, b in zip(grid, kernel.block))
            self._device.cl.enqueue_nd_range_kernel(
                self._device.queue, function, size, kernel.block
            )

    def finish(self) -> None:
        """The outputs copied back into the caller's arrays."""
        cl, queue = self._device.cl, self._device.queue
        for array, buffer, out in zip(self._arrays, self._buffers, self._kernel.written):
            if out and array.size:
                cl.enqueue_copy(queue, array, buffer)
        queue.finish()


def _options(device: OpenCLDevice) -> list[str]:
    """Correctly rounded float division and square root, as the reference computes them,
    where the device offers them (OpenCL allows 2.5 and 3 ulps by default)."""
    exact = device.cl.device_fp_config.CORRECTLY_ROUNDED_DIVIDE_SQRT
    return (
        ["-cl-fp32-correctly-rounded-divide-sqrt"] if device.device.single_fp_config & exact else []
    )


def _buffer(cl, device: OpenCLDevice, flags, array: np.ndarray):
    if array.nbytes == 0:  # OpenCL has no empty buffers
        return cl.Buffer(device.context, flags.READ_WRITE, 1)
    return cl.Buffer(device.context, flags.READ_WRITE | flags.COPY_HOST_PTR, hostbuf=array)
