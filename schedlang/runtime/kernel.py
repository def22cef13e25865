"""`Kernel`: a compiled schedule you call on numpy arrays, as ``kernel(A, B, C)``."""

from __future__ import annotations

import ctypes

import numpy as np

from ..codegen.cpu.compiled import CompiledCpu
from ..codegen.cpu.trampoline import UNUSUAL, guard
from ..codegen.status import OUT_OF_MEMORY
from ..errors import InternalError, LaunchError, entry_point
from ..loopir.core.nodes import LoweredFunc
from .arguments import check_arguments, written_params
from .fast_path import guard_spec
from .outputs import OutputPlan
from .packed_calls import raise_errors, trampolines
from .parallel import runtime_imports
from .scalars import ScalarArguments
from .size_limits import SizeLimits
from .wall_time import median_seconds

_ENTRY = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p)


class Kernel:
    """A lowered function compiled for the CPU.

    ``kernel(*arrays, **sizes)`` runs it on numpy arrays in the order of `args` given to
    `sl.build`, writing outputs in place; sizes that no array shows are passed by name. Called
    with its inputs alone, it makes its outputs and returns them (`outputs`).
    Outputs must be C-contiguous; an input of another layout (a strided slice, a transpose) is
    copied to a C-contiguous temporary first, since the compiled code assumes dense rows.
    """

    def __init__(self, lowered: LoweredFunc, compiled: CompiledCpu, target: str = "cpu") -> None:
        self.lowered = lowered
        self.target = target
        self._compiled = compiled
        self._entry = _ENTRY(compiled.address)
        self._written = written_params(lowered)
        self._limits = SizeLimits(lowered)
        self.output_plan = OutputPlan(lowered, self._written)
        self._scalars = ScalarArguments(lowered, self._written, self.output_plan.inputs)
        # the usual call checked and started in machine code (`fast_path`), or None
        spec = guard_spec(lowered, self._written, self._limits)
        self._guard = None if spec is None else guard(spec, compiled.address)
        self._checked = None if self._guard is None else self._guard.function
        self._table = None if self._guard is None else self._guard.table
        self._packed = trampolines(lowered)  # Python functions it calls: their exceptions

    @classmethod
    def for_cpu(cls, lowered: LoweredFunc, contract: bool = True) -> Kernel:
        """Compile `lowered` for this machine's CPU (cached); `contract`: whether ``a * b + c``
        may become one fused multiply-add (the target option ``-fp-contract``)."""
        from ..codegen.cpu.cache import compile_cpu  # the code generator: not for a revival

        compiled = compile_cpu(lowered, runtime_imports(lowered), contract)
        return cls(lowered, compiled, "cpu" if contract else "cpu -fp-contract=off")

    @entry_point(also=(TypeError, ValueError), deep=False)
    def __call__(self, *arrays: np.ndarray, **sizes: int) -> object:
        if self._checked is not None and not sizes:
            status = self._checked(id(arrays), self._table)  # a tuple, alive throughout
            if self._packed:
                raise_errors(self._packed)
            if status == 0:
                return None
            if status != UNUSUAL:
                raise self._failure(status)
        arrays = self._scalars.arrays(arrays)
        completed = self.output_plan.complete(arrays, sizes)
        if completed is not None:  # inputs alone: the outputs are made and returned
            full, made = completed
            self._run(check_arguments(self.lowered, self._written, full, sizes, self._limits))
            return made[0] if len(made) == 1 else made
        self._run(check_arguments(self.lowered, self._written, arrays, sizes, self._limits))
        return None

    def export(self, path) -> None:
        """Save the kernel to `path` for `sl.load` in another process (`runtime.saved`)."""
        from .saved import export

        export(self, path)

    def _failure(self, status: int) -> LaunchError:
        if status == OUT_OF_MEMORY:
            return LaunchError(f"kernel '{self.lowered.name}' ran out of memory for a buffer")
        return InternalError(f"kernel '{self.lowered.name}' returned the unknown status {status}")

    @entry_point(also=(TypeError, ValueError), deep=False)
    def time(self, *arrays: np.ndarray, repeat: int = 10, warmup: int = 1, **sizes: int) -> float:
        """Median seconds per call over `repeat` calls, after `warmup` untimed ones."""
        if repeat < 1 or warmup < 0:  # before the arguments are checked, as always
            raise ValueError(f"need repeat >= 1 and warmup >= 0, got {repeat} and {warmup}")
        arrays = self._scalars.arrays(arrays)
        call = check_arguments(self.lowered, self._written, arrays, sizes, self._limits)
        return median_seconds(lambda: self._run(call), repeat, warmup)

    def _run(self, call) -> None:
        status = self._entry(call.buffers, call.sizes)
        if self._packed:
            raise_errors(self._packed)
        if status != 0:
            raise self._failure(status)

    @property
    def llvm_ir(self) -> str:
        """The LLVM IR generated for the kernel, before optimisation."""
        return self._compiled.llvm_ir

    @property
    def optimized_ir(self) -> str:
        """The LLVM IR after the -O3 pipeline."""
        return self._compiled.optimized_ir

    @property
    def asm(self) -> str:
        """The host assembly of the kernel."""
        return self._compiled.asm

    def __repr__(self) -> str:
        params = ", ".join(f"{b.name}: {b.dtype}[{len(b.shape)}d]" for b in self.lowered.params)
        return f"<Kernel {self.lowered.name}({params}) target={self.target}>"

    def _repr_html_(self) -> str:
        from .html import kernel_html

        return kernel_html(self)
