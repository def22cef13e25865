"""`CudaKernel`: a schedule compiled to PTX, called like the CPU `Kernel`.

Building needs no GPU: the PTX is generated (and can be read, or checked with ptxas) on any
machine. The GPU is touched on the first call, which loads the module (shared by the kernels of
one PTX, unloaded when the last of them is collected). A call checks and places its arguments
and launches the kernels on the caller's stream (`streams`: ``stream=``, torch's or cupy's
current one, else the legacy default stream); on the legacy stream, or with host arrays to copy
back, it waits for them and copies host outputs back, and an error the driver reports while they
run is a `LaunchError` naming the kernel. After a first call, the usual call with torch tensors,
cupy arrays or ``sl`` device arrays takes a shorter way (`usual_calls`).
"""

from __future__ import annotations

import statistics
from typing import Any

from ...codegen.nvptx.compiled import CompiledCuda
from ...errors import LaunchError, entry_point
from ...loopir.core.nodes import LoweredFunc
from ...platform_info import cuda_available
from ..arguments import check_arguments, named_sizes, written_params
from ..fast_path import guard_spec
from ..outputs import OutputPlan
from ..scalars import ScalarArguments
from ..size_limits import SizeLimits
from ..streams import callers_stream, stream_handle
from ..usual_calls import UsualCall
from . import driver
from .arguments import Placed, place_arguments
from .launch import Launch, LaunchConfig, check_block, describe_grid, prepare_launch


class CudaKernel:
    """A lowered function compiled for a CUDA GPU.

    ``kernel(*arrays, stream=None, **sizes)`` takes numpy arrays (copied in and out),
    ``sl.array`` device arrays and GPU tensors (``__cuda_array_interface__`` or DLPack, passed
    in place), in `args` order, or the inputs alone (the outputs are made and returned).
    """

    def __init__(self, lowered: LoweredFunc, compiled: CompiledCuda, target: str) -> None:
        self.lowered = lowered
        self.target = target
        self._compiled = compiled
        self._written = written_params(lowered)
        self._limits = SizeLimits(lowered)
        self._module: driver.Module | None = None  # the functions' lifetime
        self._functions: list[Any] | None = None
        self._usual: UsualCall | None = None  # the usual call, made after a first call
        self._usual_tried = False
        self.output_plan = OutputPlan(lowered, self._written)
        self._scalars = ScalarArguments(lowered, self._written, self.output_plan.inputs)

    @entry_point(also=(TypeError, ValueError), deep=False)
    def __call__(self, *arrays: object, stream: object = None, **sizes: int) -> object:
        handle = None if stream is None else stream_handle(stream)
        if self._usual is not None and not sizes and self._usual.launch(arrays, handle):
            return None  # queued on the caller's stream (`usual_calls`)
        arrays = self._scalars.arrays(arrays)
        completed = self.output_plan.complete(arrays, sizes)
        if completed is not None:  # inputs alone: the outputs are made and returned
            full, made = completed
            self(*full, stream=stream, **sizes)
            return made[0] if len(made) == 1 else made
        placed = self._place(arrays, sizes)
        launch = self._prepare(placed)
        if handle is None:
            handle = callers_stream(arrays, driver.device().ordinal)
        launch.run(0 if handle is None else handle)
        # the legacy stream waits, and so does a call with memory of its own (copies of host
        # arrays, temporaries) or borrowed (DLPack tensors), which goes when the call returns
        if handle is None or placed.copied or placed.taken or self._compiled.plan.temps:
            self._wait("running", 0 if handle is None else handle)
        placed.finish()
        if self._usual is None and not self._usual_tried:
            self._usual_tried = True
            spec = guard_spec(self.lowered, self._written, self._limits, derived=True)
            self._usual = UsualCall.make(
                self.lowered.name,
                self._compiled.plan,
                self._functions,
                spec,
                self._limits,
                driver.device(),
            )

    @entry_point(also=(TypeError, ValueError))
    def simulate(self, *arrays: object, **sizes: int) -> None:
        """Run the kernel on the CPU, block by block and thread by thread, in the loop-IR
        interpreter, writing the outputs in place as a call would.

        For checking a GPU schedule against `sl.reference` on a machine without a GPU, and for
        notebooks that show it there. It follows the CUDA execution model (each thread its
        own local memory, shared memory per block, barriers), so a schedule that is right here
        is right on the GPU; it is slow (keep sizes small). Arrays are numpy arrays. Its
        arithmetic is the reference's: ``a * b + c`` rounds twice, as a kernel built with
        ``-fp-contract=off`` computes it; by default the GPU fuses it, which moves a result
        by up to half an ulp of the product (docs/math.md).
        """
        from ...loopir.interpret import run

        arrays = self._scalars.arrays(arrays)
        check_arguments(self.lowered, self._written, arrays, sizes, self._limits)  # as a call
        run(self.lowered, list(arrays), named_sizes(self.lowered, sizes))

    @entry_point(also=(TypeError, ValueError), deep=False)
    def time(self, *arrays: object, repeat: int = 10, warmup: int = 1, **sizes: int) -> float:
        """Median seconds per call over `repeat` calls after `warmup`, measured with CUDA
        events around the kernels alone: the arguments are placed, the grids evaluated and the
        temporaries allocated once, before the first call."""
        if repeat < 1 or warmup < 0:
            raise ValueError(f"need repeat >= 1 and warmup >= 0, got {repeat} and {warmup}")
        placed = self._place(self._scalars.arrays(arrays), sizes)
        launch = self._prepare(placed)
        cuda = driver.driver()
        for _ in range(warmup):
            launch.run()
        start = driver.check(cuda.cuEventCreate(0), "cuEventCreate")
        end = driver.check(cuda.cuEventCreate(0), "cuEventCreate")
        samples = []
        try:
            for _ in range(repeat):
                driver.check(cuda.cuEventRecord(start, 0), "cuEventRecord")
                launch.run()
                driver.check(cuda.cuEventRecord(end, 0), "cuEventRecord")
                driver.check(cuda.cuEventSynchronize(end), f"timing '{self.lowered.name}'")
                ms = driver.check(cuda.cuEventElapsedTime(start, end), "cuEventElapsedTime")
                samples.append(float(ms) / 1e3)
        finally:
            cuda.cuEventDestroy(start)
            cuda.cuEventDestroy(end)
        self._wait("running")
        placed.finish()
        return statistics.median(samples)

    def _place(self, arrays: tuple[object, ...], sizes: dict[str, int]) -> Placed:
        return place_arguments(self.lowered, self._written, arrays, sizes, self._limits)

    def _prepare(self, placed: Placed) -> Launch:
        device = driver.device()
        functions = self._load(device)
        return prepare_launch(
            self.lowered.name,
            self._compiled.plan,
            functions,
            placed.pointers,
            placed.sizes,
            device,
        )

    def _load(self, device: driver.Device) -> list[Any]:
        if self._functions is None:
            for kernel in self._compiled.plan.kernels:
                check_block(kernel, f"{self.lowered.name}/{kernel.name}", device)
            arch = self._compiled.arch
            what = f"kernel '{self.lowered.name}' (built for {arch}, running on {device.name})"
            try:
                module = driver.load_module(self.ptx, what)
            except LaunchError as error:
                if arch.rstrip("af") != device.arch:
                    hint = f"; build with target='cuda -arch={device.arch}'"
                    raise LaunchError(f"{error}{hint}") from error
                raise
            functions = []
            for kernel in self._compiled.plan.kernels:
                function = driver.function(module, kernel.name)
                if kernel.dynamic_shared_bytes:
                    name = f"kernel '{self.lowered.name}/{kernel.name}'"
                    driver.allow_dynamic_shared(function, kernel.dynamic_shared_bytes, name)
                functions.append(function)
            self._module, self._functions = module, functions
        return self._functions

    def _wait(self, doing: str, stream: int = 0) -> None:
        synced = driver.driver().cuStreamSynchronize(stream)
        driver.check(synced, f"kernel '{self.lowered.name}' failed while {doing}")

    def export(self, path) -> None:
        """Save the kernel to `path` for `sl.load` in another process (`runtime.saved`)."""
        from ..saved import export

        export(self, path)

    @property
    def ptx(self) -> str:
        """The PTX of all kernels (one module)."""
        return self._compiled.ptx

    @property
    def llvm_ir(self) -> str:
        """The LLVM IR generated for the kernels, before libdevice and optimisation."""
        return self._compiled.llvm_ir

    @property
    def launch_config(self) -> tuple[LaunchConfig, ...]:
        """Per kernel, in launch order: grid, block, shared bytes per block (dynamic above
        48 KB), and registers per thread where a GPU is present (loading the module asks the
        driver)."""
        registers: list[int | None] = [None] * len(self._compiled.plan.kernels)
        if self._functions is None and cuda_available():
            self._load(driver.device())
        if self._functions is not None:
            cuda = driver.driver()
            attribute = cuda.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NUM_REGS
            registers = [
                int(driver.check(cuda.cuFuncGetAttribute(attribute, f), "cuFuncGetAttribute"))
                for f in self._functions
            ]
        return tuple(
            LaunchConfig(k.name, describe_grid(k), k.block, k.shared_bytes, r, k.shared.dynamic)
            for k, r in zip(self._compiled.plan.kernels, registers)
        )

    def __repr__(self) -> str:
        params = ", ".join(f"{b.name}: {b.dtype}[{len(b.shape)}d]" for b in self.lowered.params)
        return f"<CudaKernel {self.lowered.name}({params}) target={self.target}>"

    def _repr_html_(self) -> str:
        from ..html import kernel_html

        return kernel_html(self)
