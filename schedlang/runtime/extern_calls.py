"""A build whose schedule has `extern` stages or hybrid scripts: their calls first, then one
kernel for the computed stages, which reads the calls' results as inputs. A hybrid script's
call is a compiled function of its own (`loopir.hybrid`).

An extern stage is computed whole by a function schedlang cannot see into, so it runs before
the kernel that reads it, and only from inputs that exist before the kernel runs: placeholders,
scalar parameters, and other extern stages (a computed input would need a kernel before the
call; build that part separately and pass its result). Results the caller does not list in
`args` are held in arrays of this object's own, made at each call.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import LoweringError
from ..ir import dtype as dt
from ..ir.evaluate import _bind_sizes, _size_value
from ..ir.expr import Read
from ..ir.extern import ExternBuffer, ExternOp
from ..ir.hybrid.nodes import HybridCall, HybridOp
from ..ir.packed import call_extern, get_global_func
from ..ir.tensor import ComputeOp, Operation, PlaceholderOp, Tensor
from ..loopir.hybrid import hybrid_params, lower_hybrid
from ..schedule.schedule import Schedule
from .wall_time import median_seconds

Step = ExternOp | HybridCall


def extern_ops(s: Schedule) -> list[Step]:
    """The schedule's extern stages and hybrid script calls, each after those it reads
    (stages are in that order)."""
    steps: list[Step] = []
    for stage in s.stages:
        step = stage.op.call if isinstance(stage.op, HybridOp) else stage.op
        if isinstance(stage.op, (ExternOp, HybridOp)) and step not in steps:
            steps.append(step)
    return steps


def _outputs(step: Step) -> tuple[Operation, ...]:
    return step.ops if isinstance(step, HybridCall) else (step,)


def _inputs(step: Step) -> tuple[Tensor, ...]:
    return step.inputs


class ExternProgram:
    """Called like a kernel (`args` in order, sizes by name): the extern calls, then
    `kernel` over `kernel_ops` (None when nothing is computed)."""

    def __init__(
        self,
        arg_ops: Sequence[Operation],
        externs: Sequence[ExternOp],
        kernel: object | None,
        kernel_ops: Sequence[Operation],
    ) -> None:
        self.arg_ops = tuple(arg_ops)
        self.externs = tuple(externs)
        self.kernel = kernel
        self.kernel_ops = tuple(kernel_ops)
        self.target = "cpu"
        self.hybrid_kernels = {
            step: _hybrid_kernel(step) for step in externs if isinstance(step, HybridCall)
        }

    def __call__(self, *arrays: object, **sizes: int) -> None:
        if len(arrays) != len(self.arg_ops):
            raise TypeError(f"expected {len(self.arg_ops)} arguments, got {len(arrays)}")
        given = {op: _as_array(op, a) for op, a in zip(self.arg_ops, arrays)}
        known = _bind_sizes(list(self.arg_ops), given, sizes)  # shapes checked here too
        values: dict[Operation, np.ndarray] = dict(given)
        for step in self.externs:
            for op in _outputs(step):
                if op not in values:
                    shape = tuple(_size_value(n, known) for n in op.shape)
                    values[op] = np.empty(shape, dt.to_numpy(op.dtype))
            if isinstance(step, HybridCall):
                self.hybrid_kernels[step](*(values[op] for op in hybrid_params(step)))
            else:
                call_extern(step, values, values[step])
        if self.kernel is not None:
            self.kernel(*(values[op] for op in self.kernel_ops), **sizes)

    def time(self, *arrays: object, repeat: int = 10, warmup: int = 1, **sizes: int) -> float:
        """The median seconds of a call (the extern calls and the kernel), after `warmup`."""
        return median_seconds(lambda: self(*arrays, **sizes), repeat, warmup)

    @property
    def llvm_ir(self) -> str:
        """The kernel's LLVM IR (the extern calls are Python, on the host)."""
        return "" if self.kernel is None else self.kernel.llvm_ir

    @property
    def asm(self) -> str:
        return "" if self.kernel is None else self.kernel.asm

    def export(self, path) -> None:
        raise LoweringError(
            "a build with extern stages calls Python functions, which cannot be saved with it; "
            "save the kernel of the computed stages (built without them) instead"
        )

    def __repr__(self) -> str:
        calls = ", ".join(
            f"{op.name} = {op.name if isinstance(op, HybridCall) else op.call.func}(...)"
            for op in self.externs
        )
        return f"<ExternProgram {calls}; then {self.kernel!r}>"


class ExternLowered:
    """What `sl.lower` shows of a schedule with extern stages: the calls, in order, then the
    kernel's loop nest (None when nothing is computed)."""

    def __init__(self, externs: Sequence[ExternOp], kernel: object | None) -> None:
        self.externs = tuple(externs)
        self.kernel = kernel

    def __str__(self) -> str:
        lines = [
            str(lower_hybrid(op)) if isinstance(op, HybridCall) else f"{_call_str(op)}  # extern"
            for op in self.externs
        ]
        if self.kernel is not None:
            lines.append(str(self.kernel))
        return "\n".join(lines)

    def _repr_markdown_(self) -> str:
        return f"```\n{self}\n```"


def _call_str(op: ExternOp) -> str:
    from ..ir.printer import expr_str

    args = ", ".join(a.name if isinstance(a, ExternBuffer) else expr_str(a) for a in op.call.args)
    return f"{op.name} = {op.call.func}({args})"


def lower_with_externs(s: Schedule, args: list[Tensor], make_kernel) -> ExternLowered:
    """The calls and the kernel's loop nest (`make_kernel(args)`) of `s` over `args`."""
    externs = _checked(s)
    kernel_args = _kernel_args(s, args, externs)
    return ExternLowered(externs, None if kernel_args is None else make_kernel(kernel_args))


def build_with_externs(s: Schedule, args: list[Tensor], target: str, name: str, make_kernel):
    """The `ExternProgram` of `s` over `args`; `make_kernel(args)` builds the kernel of the
    computed stages over the arguments it is given."""
    externs = _checked(s)
    if target != "cpu":
        first = externs[0]
        if isinstance(first, HybridCall):
            raise LoweringError(
                f"hybrid script '{first.name}' is built for the CPU only; build for "
                f"target='cpu' (its {target} build is not there yet)"
            )
        raise LoweringError(
            f"extern stage '{first.name}' calls {first.call.func!r} on the host; "
            f"build for target='cpu' (a {target} kernel cannot call it)"
        )
    for op in externs:
        if isinstance(op, ExternOp):
            get_global_func(op.call.func)  # a missing function is an error now, not at the call
    kernel_args = _kernel_args(s, args, externs)
    arg_ops = [_op_of(a) for a in args]
    if kernel_args is None:
        return ExternProgram(arg_ops, externs, None, ())
    return ExternProgram(arg_ops, externs, make_kernel(kernel_args), map(_op_of, kernel_args))


def _checked(s: Schedule) -> list[Step]:
    externs = extern_ops(s)
    for op in externs:
        what = "hybrid script" if isinstance(op, HybridCall) else "extern stage"
        for t in _inputs(op):
            if not isinstance(t.op, PlaceholderOp):
                raise LoweringError(
                    f"{what} '{op.name}' reads '{t.name}', which the kernel computes after "
                    f"the {what} calls; build the stages before it separately and pass its "
                    "result as an input"
                )
    return externs


def _hybrid_kernel(call: HybridCall):
    from .kernel import Kernel

    return Kernel.for_cpu(lower_hybrid(call))


def _kernel_args(s: Schedule, args: list, externs: list[ExternOp]) -> list | None:
    """The arguments of the kernel of the computed stages: those of `args` it reads or
    writes, then the extern results it reads that `args` leaves out; None when nothing is
    computed."""
    computed = [stage.op for stage in s.stages if isinstance(stage.op, ComputeOp)]
    if not computed:
        return None
    read = {t.op for op in computed for t in op.input_tensors} | set(computed)
    kernel_args = [a for a in args if _op_of(a) in read]
    listed = {_op_of(a) for a in kernel_args}
    made = [op for step in externs for op in _outputs(step)]
    return kernel_args + [Tensor(op) for op in made if op in read and op not in listed]


def _op_of(a: object) -> Operation:
    if isinstance(a, Read) and not a.indices:  # a scalar parameter
        return a.tensor.op
    return a.op if isinstance(a, Tensor) else a


def _as_array(op: Operation, value: object) -> np.ndarray:
    array = np.asarray(value)
    if not op.shape and array.ndim == 0:
        return array.astype(dt.to_numpy(op.dtype))
    if array.dtype != dt.to_numpy(op.dtype):
        raise TypeError(
            f"'{op.name}' is {op.dtype} but its array is {array.dtype}: convert it with "
            f".astype({dt.to_numpy(op.dtype).name!r})"
        )
    return array
