"""Tensor intrinsics declared by the user (TE's ``decl_tensor_intrin``): a small compute, and the
call of a C function that computes it on a tile in place of the loops.

``sl.decl_tensor_intrin(c.op, body, binds)`` declares that `body(ins, outs)` (calls made with
`call_extern`, given `decl_buffer` descriptions of the compute's tensors) does what the compute
`c` does on its tile. ``s[C].tensorize(axis, intrin)`` then asks that the loops of C from `axis`
inwards be replaced by one call per tile. Lowering proves with isl that those loops compute
what `c` computes (`poly.tensorize`): the same loop extents, data axes then reduce axes; the
same expression with the same reducer; and each read moving through its tensor as the
intrinsic's read moves through its buffer. The call gets the address of each tile's first
element, and each symbolic stride of a buffer (``decl_buffer(..., strides=[sl.var("s1"), 1])``)
is the tensor's stride along that dimension.

A reduction whose reduce loops all lie inside the tile is computed whole by `body`. Where some
lie outside, the tile's partial sums are reset by `reset` (else computed by `body` at the first
step) and accumulated by `update` at each step, as in TE. The function itself is compiled
elsewhere: its LLVM IR is handed over with ``s[C].pragma(axis, "import_llvm", ir_text)``, or it
is a C function already loaded in the process. It runs on the CPU only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..errors import AlgorithmError, ScheduleError, entry_point
from ..ir import dtype as dt
from ..ir.expr import Expr, Reduce, Var, as_expr
from ..ir.extern import ArrayArgument, PackedCall
from ..ir.integers import as_int
from ..ir.intrin_call import IntrinCall
from ..ir.tensor import ComputeOp, Operation, Tensor


@dataclass(frozen=True, eq=False)
class Pointer(ArrayArgument):
    """The address of the first element of a buffer's tile, as a call argument."""

    buffer: BufferDecl
    mode: str


class BufferDecl(ArrayArgument):
    """How one tensor of an intrinsic's compute is laid out for the function: its shape and
    dtype, and its strides in elements (constants, or variables the tensorized tensor's strides
    give at each call); compact row-major by default."""

    def __init__(self, shape, dtype: str, name: str, strides=None, scope: str = "global"):
        self.shape = tuple(as_int(s) if as_int(s) is not None else s for s in shape)
        self.dtype = dt.canonical(dtype)
        self.name = name
        self.scope = scope
        if strides is None:
            compact, step = [], 1
            for n in reversed(self.shape):
                compact.append(step)
                step = step * n if isinstance(step, int) and isinstance(n, int) else None
            strides = list(reversed(compact))
        if len(strides) != len(self.shape):
            raise AlgorithmError(
                f"decl_buffer '{name}': {len(strides)} strides for {len(self.shape)} dimensions"
            )
        self.strides = [s if isinstance(s, Var) else as_int(s) for s in strides]
        for s in self.strides:
            if s is None:
                raise AlgorithmError(
                    f"decl_buffer '{name}': a stride is an integer or a variable (sl.var)"
                )

    def access_ptr(self, access_mask: object = "rw", *_, **__) -> Pointer:
        """The address of the tile's first element, for the function to read or write."""
        return Pointer(self, str(access_mask))

    def __repr__(self) -> str:
        return f"BufferDecl({self.name}, {self.shape}, {self.dtype})"


@entry_point
def decl_buffer(
    shape, dtype: object = "float32", name: str = "buffer", strides=None, scope: str = "global"
) -> BufferDecl:
    """The layout of a tensor of an intrinsic's compute, as its function sees it."""
    return BufferDecl(shape, dt.canonical(dtype), name, strides, scope or "global")


@dataclass(frozen=True, eq=False)
class ExternCall:
    """A call of the C function `name` (returning `dtype`, which is ignored) with `args`:
    tile addresses (`Pointer`) and integers (expressions of constants and stride variables).
    A `packed` call calls the Python function registered as `name` (``sl.call_packed``),
    handing it each tile as an array (a view of the tensor) and the integers."""

    name: str
    dtype: str
    args: tuple[Pointer | Expr, ...]
    packed: bool = False


@entry_point
def call_extern(dtype: object, name: str, *args: object) -> ExternCall:
    """A call of the C function `name`, for the body of a `decl_tensor_intrin`."""
    if not isinstance(name, str) or not name.isidentifier():
        raise AlgorithmError(f"call_extern: {name!r} is not a C function name")
    return ExternCall(name, dt.canonical(dtype), _arguments("call_extern", name, args))


def _arguments(
    how: str, name: str, args, output: BufferDecl | None = None
) -> tuple[Pointer | Expr, ...]:
    """A call's arguments; a packed call's buffers are whole tiles, the `output` one written
    (and read, where it accumulates)."""
    values = []
    for a in args:
        if isinstance(a, BufferDecl) and how == "call_packed":
            a = Pointer(a, "rw" if a is output else "r")
        if isinstance(a, Pointer):
            values.append(a)
            continue
        e = as_expr(a)
        if not dt.is_int(e.dtype):
            raise AlgorithmError(
                f"{how} '{name}': arguments are tile addresses (buffer.access_ptr) and "
                f"integers, not {e.dtype} ('{e}')"
            )
        values.append(e)
    return tuple(values)


@dataclass(frozen=True, eq=False)
class UserIntrin:
    """A declared intrinsic (see the module): `op` is what it computes, `buffers` how each of
    its tensors is laid out (inputs in `op`'s order, then the output), and the calls."""

    name: str
    op: ComputeOp
    buffers: dict[Operation, BufferDecl]
    body: tuple[ExternCall, ...]
    reset: tuple[ExternCall, ...] = ()
    update: tuple[ExternCall, ...] = ()

    kind = "user"
    scope = None
    tf32 = False
    warpgroup = False

    @property
    def shape(self) -> tuple[int, ...]:
        """The extents of the loops it replaces: the compute's axes, then its reduce axes."""
        return tuple(as_int(iv.dom.extent) for iv in self.op.axis + self.op.reduce_axis)

    @entry_point
    def __call__(
        self, *regions: object, reduce_axis: object = None, scalar_inputs: object = None
    ) -> IntrinCall:
        """The intrinsic applied to regions of tensors, in a compute's body:
        ``compute((n, 16), lambda i: vadd(A[i, 0:16], B[i, 0:16]))`` (`ir.intrin_call`);
        `reduce_axis` (an axis or a list) accumulates its tiles, as a reduction's
        reset and update calls do."""
        if scalar_inputs:
            raise AlgorithmError(
                f"{self.name}: scalar_inputs (scalar parameters of an intrinsic) are not "
                "supported; the function's arguments are tile addresses and integers"
            )
        axes = () if reduce_axis is None else reduce_axis
        axes = tuple(axes) if isinstance(axes, (list, tuple)) else (axes,)
        return IntrinCall(self, self.op, regions, axes)

    def __repr__(self) -> str:
        return self.name


@entry_point
def decl_tensor_intrin(
    op: object, fcompute: Callable, name: str = "", binds: dict | None = None
) -> UserIntrin:
    """An intrinsic computing `op` (a compute of constant shape) by the calls that
    ``fcompute(ins, outs)`` returns: one call or a list of calls (the body), or the tuple
    ``(body, reset, update)`` (each a call, a list, or None) for reductions split around the
    tile. `binds` maps the compute's tensors to `decl_buffer` layouts (compact row-major
    where not given)."""
    op = op.op if isinstance(op, Tensor) else op
    if not isinstance(op, ComputeOp) or op.outputs is not None:
        raise ScheduleError(
            f"decl_tensor_intrin: {getattr(op, 'name', op)!r} must be a compute with one output"
        )
    for iv in op.axis + op.reduce_axis:
        if as_int(iv.dom.extent) is None or as_int(iv.dom.min) != 0:
            raise ScheduleError(
                f"decl_tensor_intrin '{op.name}': the axis '{iv.var.name}' must run over a "
                "constant range from 0 (the intrinsic's tile)"
            )
    binds = dict(binds or {})
    tensors = [*op.input_tensors, Tensor(op)]
    buffers: dict[Operation, BufferDecl] = {}
    for t in tensors:
        given = next((b for k, b in binds.items() if getattr(k, "op", k) is t.op), None)
        buffers[t.op] = given or BufferDecl(t.shape, t.dtype, t.name)
        if [as_int(n) for n in buffers[t.op].shape] != [as_int(n) for n in t.shape]:
            raise ScheduleError(
                f"decl_tensor_intrin '{op.name}': the buffer of '{t.name}' has shape "
                f"{buffers[t.op].shape}, the tensor {tuple(t.shape)}"
            )
    produced = fcompute([buffers[t.op] for t in tensors[:-1]], [buffers[op]])
    if isinstance(produced, tuple) and len(produced) != 3:
        raise ScheduleError(
            f"decl_tensor_intrin '{op.name}': a tuple is (body, reset, update); several calls "
            "of one body are a list"
        )
    parts = produced if isinstance(produced, tuple) else (produced,)
    calls = [_calls(p, op.name, buffers[op]) for p in parts]
    body, reset, update = (calls + [(), ()])[:3]
    if len(parts) == 3 and not isinstance(op.expr, Reduce):
        raise ScheduleError(
            f"decl_tensor_intrin '{op.name}': reset and update are for reductions; '{op.name}' "
            "is elementwise"
        )
    return UserIntrin(name or f"intrin {op.name}", op, buffers, body, reset, update)


def _calls(part: object, name: str, output: BufferDecl) -> tuple[ExternCall, ...]:
    if part is None:
        return ()
    if isinstance(part, PackedCall):
        args = _arguments("call_packed", part.func, part.args, output)
        return (ExternCall(part.func, "int32", args, packed=True),)
    if isinstance(part, ExternCall):
        return (part,)
    if isinstance(part, (list, tuple)) and all(
        isinstance(p, (ExternCall, PackedCall)) for p in part
    ):
        return tuple(c for p in part for c in _calls(p, name, output))
    raise ScheduleError(
        f"decl_tensor_intrin '{name}': the body is call_extern(...) or call_packed(...) calls, "
        f"not {part!r}"
    )
