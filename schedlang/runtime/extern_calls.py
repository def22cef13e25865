"""A build whose schedule has `extern` stages or hybrid scripts: a kernel for the computed
stages the calls read (when they read any), the calls, then one kernel for the computed
stages, which reads the calls' results as inputs. A hybrid script's call is a compiled
function of its own (`loopir.hybrid`).

An extern stage is computed whole by a function schedlang cannot see into, so it runs before
the kernel that reads it, from placeholders, scalar parameters, other calls' results, and
computed stages, which the first kernel computes (a computed stage that reads a call's result
and is read by another call would need a kernel between the calls; build that part separately
and pass its result). Results the caller does not list in `args` are held in arrays of this
object's own, made at each call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..errors import LoweringError
from ..ir import dtype as dt
from ..ir.evaluate import _bind_sizes, _size_value
from ..ir.expr import Read
from ..ir.extern import ExternBuffer, ExternOp
from ..ir.graph import together
from ..ir.hybrid.nodes import HybridCall, HybridOp
from ..ir.packed import call_extern, get_global_func
from ..ir.tensor import ComputeOp, Operation, PlaceholderOp, Tensor
from ..loopir.hybrid import hybrid_params, lower_hybrid
from ..schedule.schedule import Schedule, replay
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
    return step.ops if isinstance(step, HybridCall) else together(step)


def _inputs(step: Step) -> tuple[Tensor, ...]:
    return step.inputs


class ExternProgram:
    """Called like a kernel (`args` in order, sizes by name): `first` (a kernel and the ops
    of its arguments, for the computed stages the calls read; None when they read none),
    the calls, then `kernel` over `kernel_ops` (None when nothing else is computed)."""

    def __init__(
        self,
        arg_ops: Sequence[Operation],
        externs: Sequence[ExternOp],
        kernel: object | None,
        kernel_ops: Sequence[Operation],
        first: tuple[object, Sequence[Operation]] | None = None,
        hybrid_kernels: Mapping[HybridCall, object] | None = None,
        target: str = "cpu",
    ) -> None:
        self.arg_ops = tuple(arg_ops)
        self.externs = tuple(externs)
        self.kernel = kernel
        self.kernel_ops = tuple(kernel_ops)
        self.first = first
        self.target = target
        self.hybrid_kernels = dict(hybrid_kernels or {})  # each script's compiled function

    def __call__(self, *arrays: object, **sizes: int) -> None:
        self._run(arrays, sizes, lambda kernel: kernel)

    def simulate(self, *arrays: object, **sizes: int) -> None:
        """As a call, with each GPU kernel run in the loop-IR interpreter (`CudaKernel.simulate`):
        a program built for CUDA checked on a machine without a GPU."""
        self._run(arrays, sizes, lambda kernel: getattr(kernel, "simulate", kernel))

    def _run(self, arrays: tuple, sizes: dict, launch) -> None:
        """The program over `arrays`, each kernel run as ``launch(kernel)(...)``."""
        if len(arrays) != len(self.arg_ops):
            raise TypeError(f"expected {len(self.arg_ops)} arguments, got {len(arrays)}")
        given = {op: _as_array(op, a) for op, a in zip(self.arg_ops, arrays)}
        known = _bind_sizes(list(self.arg_ops), given, sizes)  # shapes checked here too
        values: dict[Operation, np.ndarray] = dict(given)

        def make(ops: Sequence[Operation]) -> None:
            for op in ops:
                if op not in values:
                    shape = tuple(_size_value(n, known) for n in op.shape)
                    values[op] = np.empty(shape, dt.to_numpy(op.dtype))

        if self.first is not None:
            kernel, ops = self.first
            make(ops)
            launch(kernel)(*(values[op] for op in ops), **sizes)
        for step in self.externs:
            make(_outputs(step))
            if isinstance(step, HybridCall):
                if self.target != "cpu":  # the GPU functions leave the zeros to the caller
                    for op in step.ops:
                        _fill_zeros(values[op])
                kernel = self.hybrid_kernels[step]
                named = {v.name for v in kernel.lowered.sizes}  # a script's own sizes
                launch(kernel)(
                    *(values[op] for op in hybrid_params(step)),
                    **{name: value for name, value in sizes.items() if name in named},
                )
            else:
                call_extern(step, values)
        if self.kernel is not None:
            launch(self.kernel)(*(values[op] for op in self.kernel_ops), **sizes)

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

    @property
    def ptx(self) -> str:
        """The PTX of a CUDA build's kernels (the stages, the hybrid scripts), one after
        another; empty for the CPU."""
        first = None if self.first is None else self.first[0]
        kernels = [first, *self.hybrid_kernels.values(), self.kernel]
        return "\n".join(k.ptx for k in kernels if getattr(k, "ptx", None))

    def export(self, path) -> None:
        if any(isinstance(step, ExternOp) for step in self.externs):
            raise LoweringError(
                "a build with extern stages calls Python functions, which cannot be saved with "
                "it; save the kernel of the computed stages (built without them) instead"
            )
        raise LoweringError(
            "a build with hybrid scripts runs a function for each script and kernels for the "
            "stages around them, which are not saved as one file; save the kernels of the "
            "computed stages (built without the scripts) instead"
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

    def __init__(
        self, externs: Sequence[ExternOp], kernel: object | None, hybrids: Mapping
    ) -> None:
        self.externs = tuple(externs)
        self.kernel = kernel
        self.hybrids = dict(hybrids)  # each script call's function
        self.first: object | None = None  # the kernel of the computed stages the calls read

    def __str__(self) -> str:
        lines = [] if self.first is None else [str(self.first)]
        lines += [
            str(self.hybrids[op])
            if isinstance(op, HybridCall)
            else f"{_call_str(op)}  # extern, on the host"
            for op in self.externs
        ]
        if self.kernel is not None:
            lines.append(str(self.kernel))
        return "\n".join(lines)

    def _repr_markdown_(self) -> str:
        return f"```\n{self}\n```"

    def functions(self) -> list:
        """The loop-nest functions, in the order they run (extern calls have none)."""
        hybrids = [self.hybrids[op] for op in self.externs if isinstance(op, HybridCall)]
        return [f for f in (self.first, *hybrids, self.kernel) if f is not None]


def _call_str(op: ExternOp) -> str:
    from ..ir.printer import expr_str

    args = ", ".join(a.name if isinstance(a, ExternBuffer) else expr_str(a) for a in op.call.args)
    return f"{op.name} = {op.call.func}({args})"


def lower_with_externs(s: Schedule, args: list[Tensor], make_kernel) -> ExternLowered:
    """The calls and the kernels' loop nests (`make_kernel(schedule, args)`) of `s` over
    `args`."""
    externs = _checked(s)
    first = _first_part(s, args, externs)
    kernel_args = _kernel_args(s, args, externs, () if first is None else first[2])
    kernel = None if kernel_args is None else make_kernel(s, kernel_args)
    lowered = ExternLowered(externs, kernel, _hybrid_functions(s, externs))
    if first is not None:
        lowered.first = make_kernel(first[0], first[1])
    return lowered


def build_with_externs(
    s: Schedule, args: list[Tensor], target: str, name: str, make_kernel, make_function
):
    """The `ExternProgram` of `s` over `args`; `make_kernel(schedule, args)` builds the
    kernel of a schedule's computed stages over the arguments it is given, and
    `make_function(lowered)` a script's function, both for `target`."""
    externs = _checked(s)
    host = [op for op in externs if isinstance(op, ExternOp)]
    if target != "cpu" and host:
        first = host[0]
        raise LoweringError(
            f"extern stage '{first.name}' calls {first.call.func!r} on the host; "
            f"build for target='cpu' (a {target} kernel cannot call it)"
        )
    for op in externs:
        if isinstance(op, ExternOp):
            get_global_func(op.call.func)  # a missing function is an error now, not at the call
    first = _first_part(s, args, externs)
    done = () if first is None else first[2]
    first_kernel = None if first is None else (make_kernel(*first[:2]), first[2])
    kernel_args = _kernel_args(s, args, externs, done)
    arg_ops = [_op_of(a) for a in args]
    kernel = None if kernel_args is None else make_kernel(s, kernel_args)
    kernel_ops = () if kernel_args is None else map(_op_of, kernel_args)
    functions = _hybrid_functions(s, externs, zero_fill=target == "cpu")
    hybrid_kernels = {call: make_function(f) for call, f in functions.items()}
    return ExternProgram(arg_ops, externs, kernel, kernel_ops, first_kernel, hybrid_kernels, target)


def _checked(s: Schedule) -> list[Step]:
    laid_out = [stage.name for stage in s.stages if stage.layout is not None]
    if laid_out:
        raise LoweringError(
            f"'{laid_out[0]}' is stored in another layout (transform_layout), which the calls "
            "of extern stages and hybrid scripts do not follow; keep its layout in such a build"
        )
    return extern_ops(s)


def _first_part(s: Schedule, args: list, externs: list[Step]):
    """For calls that read computed stages: a schedule of those stages alone (the records
    of `s` on them replayed), its kernel's arguments (the placeholders they read, then the
    tensors it computes: those the calls read and those of `args`), and the ops of the
    latter; None when the calls read placeholders only."""
    roots = [t.op for step in externs for t in _inputs(step) if not isinstance(t.op, PlaceholderOp)]
    if not roots:
        return None
    roots = list(dict.fromkeys(roots))
    needed: dict[Operation, None] = {}
    stack = [(op, op) for op in roots]  # (an op, the root that needs it)
    while stack:
        op, root = stack.pop()
        if op in needed:
            continue
        needed[op] = None
        if isinstance(op, (ExternOp, HybridOp)):
            raise LoweringError(
                f"'{root.name}' is computed from '{op.name}' and read by the call of "
                f"'{_reader(externs, root).name}': a computed stage between two calls; "
                "build the stages before the second call separately and pass their result"
            )
        if not isinstance(op, PlaceholderOp):
            stack.extend((t.op, root) for t in op.input_tensors)
    names = {s[op].name for op in needed if not isinstance(op, PlaceholderOp)}
    first = replay(roots, [r for r in s.records if r.stage in names])
    computed = roots + [
        op
        for op in map(_op_of, args)
        if op in needed and op not in roots
        if not isinstance(op, PlaceholderOp)
    ]
    inputs = [op for op in needed if isinstance(op, PlaceholderOp)]
    kernel_args = [Tensor(op) for op in inputs] + [Tensor(op) for op in computed]
    return first, kernel_args, tuple(inputs + computed)


def _reader(externs: list[Step], op: Operation) -> Step:
    return next(step for step in externs if any(t.op is op for t in _inputs(step)))


def _hybrid_functions(s: Schedule, externs: list[Step], zero_fill: bool = True) -> dict:
    """Each script call's loop-IR function, its loops as its stage has them, once its accesses
    are checked to stay inside their tensors."""
    from ..poly.hybrid_bounds import check_script_bounds  # islpy: only for a script's build

    calls = [step for step in externs if isinstance(step, HybridCall)]
    return {
        call: lower_hybrid(call, s[call.ops[0]], check_script_bounds(call), zero_fill)
        for call in calls
    }


def _kernel_args(s: Schedule, args: list, externs: list[Step], done=()) -> list | None:
    """The arguments of the kernel of the computed stages: those of `args` it reads or
    writes, then the extern results it reads that `args` leaves out; None when nothing is
    computed but the stages `done` before the calls."""
    computed = [stage.op for stage in s.stages if isinstance(stage.op, ComputeOp)]
    if all(op in done for op in computed):
        return None
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


def _fill_zeros(array) -> None:
    if hasattr(array, "copy_from_host"):  # schedlang's device array
        array.copy_from_host(np.zeros(array.shape, array.dtype))
    else:
        array[...] = 0


def _as_array(op: Operation, value: object) -> np.ndarray:
    if hasattr(value, "__cuda_array_interface__"):  # on the GPU: the kernels take it as it is
        return value
    array = np.asarray(value)
    if not op.shape and array.ndim == 0:  # a number; a 0-d array of the dtype is used as is
        return array.astype(dt.to_numpy(op.dtype), copy=False)
    if array.dtype != dt.to_numpy(op.dtype):
        raise TypeError(
            f"'{op.name}' is {op.dtype} but its array is {array.dtype}: convert it with "
            f".astype({dt.to_numpy(op.dtype).name!r})"
        )
    return array
