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
from .tensor import PlaceholderOp, Tensor, _shape


@dataclass(frozen=True, slots=True, eq=False)
class ExternBuffer:
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
    """A call of the function registered as `func` with `args`: arrays (`ExternBuffer`) and
    scalars (expressions of constants and scalar parameters)."""

    func: str
    args: tuple[ExternBuffer | Expr, ...]


@dataclass(frozen=True, slots=True, eq=False)
class ExternOp(PlaceholderOp):
    """A tensor the call `call` computes from `inputs` (see the module)."""

    inputs: tuple[Tensor, ...]
    call: PackedCall
    output: ExternBuffer

    @property
    def input_tensors(self) -> tuple[Tensor, ...]:
        """The inputs, then the scalar parameters the call passes."""
        scalars = [a.tensor for a in self.call.args if isinstance(a, Read) and not a.indices]
        return self.inputs + tuple(t for t in scalars if t not in self.inputs)


@entry_point
def call_packed(func: str, *args: object) -> PackedCall:
    """A call of the function registered as `func` (``sl.register_func``), for `extern`."""
    if not isinstance(func, str):
        raise AlgorithmError(f"call_packed: the function's name must be a string, not {func!r}")
    return PackedCall(func, tuple(a if isinstance(a, ExternBuffer) else as_expr(a) for a in args))


@entry_point
def extern(
    shape: object,
    inputs: Sequence[Tensor],
    fcompute: Callable[[list[ExternBuffer], list[ExternBuffer]], PackedCall],
    name: str = "extern",
    dtype: object = None,
) -> Tensor:
    """A tensor of `shape` whose values the call `fcompute(ins, outs)` returns
    (``sl.call_packed``) writes into ``outs[0]``, reading the whole of each input in
    ``ins``. `dtype` defaults to the first input's."""
    if shape and isinstance(shape, (list, tuple)) and isinstance(shape[0], (list, tuple)):
        raise AlgorithmError(
            f"extern '{name}': one output per extern stage; call sl.extern once per output"
        )
    inputs = tuple(inputs)
    for t in inputs:
        if not isinstance(t, Tensor):
            raise AlgorithmError(f"extern '{name}': inputs must be tensors, not {t!r}")
    if dtype is None:
        if not inputs:
            raise AlgorithmError(f"extern '{name}': give dtype= (it has no input to take it from)")
        dtype = inputs[0].dtype
    dims = _shape(shape, name)
    ins = [ExternBuffer(t.name, t.shape, t.dtype, t) for t in inputs]
    out = ExternBuffer(name, dims, dt.canonical(dtype), None)
    call = fcompute(ins, [out])
    if not isinstance(call, PackedCall):
        raise AlgorithmError(
            f"extern '{name}': fcompute must return sl.call_packed(...), not {call!r}"
        )
    return Tensor(ExternOp(name, dims, out.dtype, inputs, call, out))
