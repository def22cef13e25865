"""Stages computed by a function outside schedlang (TE's ``te.extern``): a library call, or
Python registered with `sl.register_func` (`ir.packed`).

``C = sl.extern(shape, [A, B], lambda ins, outs: sl.call_packed("name", ins[0], ins[1],
outs[0], ...))`` makes a tensor whose values the named function writes, given whole arrays of
its inputs and its output (and any scalars). schedlang cannot see inside the function, so the
stage has no loops to schedule and is computed whole before the kernel that reads it: for that
kernel it is an input like a placeholder (`ExternOp` is a `PlaceholderOp` that also knows how
its values are made), and the build runs the call on the host first (`runtime.extern_calls`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..errors import AlgorithmError, entry_point
from . import dtype as dt
from .expr import Expr, Read, as_expr
from .tensor import Outputs, PlaceholderOp, Tensor, _shape


class ArrayArgument:
    """What `call_packed` passes as an array rather than a scalar: an extern stage's
    `ExternBuffer`, or a buffer a declared tensor intrinsic hands its function (one tile)."""

    __slots__ = ()


@dataclass(frozen=True, slots=True, eq=False)
class ExternBuffer(ArrayArgument):
    """An array the function is handed: ``ins[k]`` (an input tensor) or ``outs[0]`` (the
    stage's output), whole."""

    name: str
    shape: tuple[Expr, ...]
    dtype: str
    tensor: Tensor | None  # the input it holds; None for the output

    @property
    def data(self) -> ExternBuffer:
        """What TE passes for ``buffer.data`` (its data pointer): the array, as the buffer."""
        return self


@dataclass(frozen=True, slots=True, eq=False)
class PackedCall:
    """A call of the function registered as `func` with `args`: arrays (`ExternBuffer`, or
    a declared intrinsic's buffers) and scalars (expressions of constants and scalar
    parameters)."""

    func: str
    args: tuple[ArrayArgument | Expr, ...]


@dataclass(frozen=True, slots=True, eq=False)
class ExternOp(PlaceholderOp):
    """A tensor the call `call` computes from `inputs` (see the module); of a call that writes
    several, `outputs` holds them all (one stage computes them together)."""

    inputs: tuple[Tensor, ...]
    call: PackedCall
    output: ExternBuffer
    outputs: Outputs | None = None
    value_index: int = 0

    @property
    def input_tensors(self) -> tuple[Tensor, ...]:
        """The inputs, then the scalar parameters the call passes."""
        scalars = [a.tensor for a in self.call.args if isinstance(a, Read) and not a.indices]
        return self.inputs + tuple(t for t in scalars if t not in self.inputs)


@entry_point
def call_packed(func: str, *args: object) -> PackedCall:
    """A call of the function registered as `func` (``sl.register_func``), for `extern` or
    for the body of a `decl_tensor_intrin` (`schedule.user_intrin`)."""
    if not isinstance(func, str):
        raise AlgorithmError(f"call_packed: the function's name must be a string, not {func!r}")
    return PackedCall(func, tuple(a if isinstance(a, ArrayArgument) else as_expr(a) for a in args))


@entry_point
def extern(
    shape: object,
    inputs: Sequence[Tensor],
    fcompute: Callable[[list[ExternBuffer], list[ExternBuffer]], PackedCall],
    name: str = "extern",
    dtype: object = None,
) -> Tensor | list[Tensor]:
    """A tensor of `shape` whose values the call `fcompute(ins, outs)` returns
    (``sl.call_packed``) writes into ``outs[0]``, reading the whole of each input in
    ``ins``. `dtype` defaults to the first input's. With a list of shapes (and of dtypes, or
    one for all), the call writes one output per shape, ``outs[0]``, ``outs[1]``, ...: the
    tensors come back in a list."""
    several = bool(shape) and isinstance(shape, (list, tuple))
    several = several and all(isinstance(s, (list, tuple)) for s in shape)
    inputs = tuple(inputs)
    for t in inputs:
        if not isinstance(t, Tensor):
            raise AlgorithmError(f"extern '{name}': inputs must be tensors, not {t!r}")
    if dtype is None:
        if not inputs:
            raise AlgorithmError(f"extern '{name}': give dtype= (it has no input to take it from)")
        dtype = inputs[0].dtype
    shapes = list(shape) if several else [shape]
    dtypes = list(dtype) if isinstance(dtype, (list, tuple)) else [dtype] * len(shapes)
    if len(dtypes) != len(shapes):
        raise AlgorithmError(f"extern '{name}': {len(shapes)} shapes but {len(dtypes)} dtypes")
    names = [name] if not several else [f"{name}.v{k}" for k in range(len(shapes))]
    outs = [
        ExternBuffer(n, _shape(s, name), dt.canonical(d), None)
        for n, s, d in zip(names, shapes, dtypes)
    ]
    ins = [ExternBuffer(t.name, t.shape, t.dtype, t) for t in inputs]
    call = fcompute(ins, outs)
    if not isinstance(call, PackedCall):
        raise AlgorithmError(
            f"extern '{name}': fcompute must return sl.call_packed(...), not {call!r}"
        )
    if not several:
        return Tensor(ExternOp(name, outs[0].shape, outs[0].dtype, inputs, call, outs[0]))
    group = Outputs(name)
    group.ops = tuple(
        ExternOp(o.name, o.shape, o.dtype, inputs, call, o, group, k) for k, o in enumerate(outs)
    )
    return [Tensor(op, k) for k, op in enumerate(group.ops)]
