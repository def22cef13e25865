"""TE's tensor intrinsics declared by hand (``te.decl_tensor_intrin`` with
``tvm.tir.decl_buffer`` and an ``ir_builder`` body), mapped onto the ones schedlang ships.

A TE program declares each CUDA tensor-core operation as a small compute (a 16 x 16 copy, a
16 x 16 x 16 product) whose body calls one of TVM's warp-matrix builtins
(``tir.tvm_load_matrix_sync``, ``tir.tvm_mma_sync`` with ``tir.tvm_fill_fragment`` as its
reset, ``tir.tvm_store_matrix_sync``). schedlang ships those operations as `sl.intrin`, proved
against the tensorized loops by isl; `decl_tensor_intrin` runs the TE body on stand-in
buffers, reads which builtin it calls and with which fragment scope, checks the declared
compute's shape against that operation's tile, and returns the shipped intrinsic. A body that
calls C functions (``call_extern``, as tensorize.py's gemv) or registered Python functions
(``call_packed``) is schedlang's own declared intrinsic (`schedule.user_intrin`), for the CPU.
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import ScheduleError
from ..ir.extern import PackedCall
from ..ir.extern import call_packed as sl_call_packed
from ..ir.tensor import ComputeOp, Operation, Tensor
from ..schedule import intrin as sl_intrin
from ..schedule.intrin import FRAGMENT_SCOPES, TensorIntrin
from ..schedule.user_intrin import BufferDecl, ExternCall, UserIntrin
from ..schedule.user_intrin import decl_tensor_intrin as sl_decl_tensor_intrin

BUILTINS = (
    "tvm_load_matrix_sync",
    "tvm_mma_sync",
    "tvm_fill_fragment",
    "tvm_store_matrix_sync",
)


class DeclBuffer(BufferDecl):
    """``tvm.tir.decl_buffer``: schedlang's `decl_buffer`, with the handle and element offset
    that a body passes to the warp-matrix builtins."""

    def __init__(self, shape, dtype, name: str, scope: str, strides) -> None:
        super().__init__(shape, dtype, name, strides, scope)
        self.data = _Handle(self)
        self.elem_offset = _Offset(self)


class _Handle:
    def __init__(self, buffer: DeclBuffer) -> None:
        self.buffer = buffer


def call_packed(*args: object) -> PackedCall:
    """TE's ``call_packed``: a buffer's ``.data`` (its data pointer) passes the buffer, whose
    tile the function is handed as an array (`schedule.user_intrin`)."""
    return sl_call_packed(*(a.buffer if isinstance(a, _Handle) else a for a in args))


class _Offset:
    """A buffer's element offset, as far as a body divides it (``elem_offset // 256``)."""

    def __init__(self, buffer: DeclBuffer) -> None:
        self.buffer = buffer

    def __floordiv__(self, other: object) -> _Offset:
        return self

    __truediv__ = __floordiv__


def decl_buffer(
    shape,
    dtype: str = "float32",
    name: str = "buffer",
    data: object = None,
    strides=None,
    elem_offset: object = None,
    scope: str = "",
    data_alignment: int = -1,
    offset_factor: int = 0,
    buffer_type: str = "",
    axis_separators=None,
    span: object = None,
) -> DeclBuffer:
    return DeclBuffer(shape, dtype, name, scope or "global", strides)


class BuiltinCall:
    """A call of a TE warp-matrix builtin (``tir.tvm_mma_sync``) in an intrinsic's body."""

    def __init__(self, name: str, args: tuple) -> None:
        self.name = name
        self.args = args


class IRBuilder:
    """``tvm.tir.ir_builder.create()``: collects the calls a body emits."""

    def __init__(self) -> None:
        self.calls: list[BuiltinCall | ExternCall] = []

    def emit(self, call: object) -> None:
        if not isinstance(call, (BuiltinCall, ExternCall)):
            raise ScheduleError(
                f"ir_builder: an intrinsic's body emits builtin calls, not {call!r}"
            )
        self.calls.append(call)

    def get(self) -> list[BuiltinCall | ExternCall]:
        return list(self.calls)


def decl_tensor_intrin(
    op: Operation,
    fcompute: Callable,
    name: str = "tensor_intrin",
    binds: dict | None = None,
    scalar_params=None,  # TE's: no scalar parameters here
    default_buffer_params=None,  # TE's: the layouts come from `binds`
) -> TensorIntrin | UserIntrin:
    """The shipped intrinsic that TE's declaration `op` + `fcompute` describes, or, for a body
    calling C functions (``call_extern``), schedlang's declared intrinsic (see module)."""
    if not isinstance(op, ComputeOp):
        raise ScheduleError(f"decl_tensor_intrin: '{getattr(op, 'name', op)}' is not a compute")
    binds = dict(binds or {})
    ins = [_bound(binds, t) for t in op.input_tensors]
    outs = [_bound(binds, Tensor(op))]
    produced = fcompute(ins, outs)
    bodies = produced if isinstance(produced, tuple) and len(produced) == 3 else (produced,)
    calls = [call for body in bodies for call in _calls(body)]
    if any(isinstance(c, (ExternCall, PackedCall)) for c in calls):
        if not all(isinstance(c, (ExternCall, PackedCall)) for c in calls):
            raise ScheduleError(
                f"decl_tensor_intrin '{op.name}': its body mixes C functions and warp-matrix "
                "builtins"
            )
        chosen = {id(t.op): b for t, b in zip([*op.input_tensors, Tensor(op)], [*ins, *outs])}
        return sl_decl_tensor_intrin(
            op,
            lambda _ins, _outs: tuple(_calls(b) for b in bodies) if len(bodies) == 3 else calls,
            name if name != "tensor_intrin" else "",
            {t: chosen[id(t.op)] for t in [*op.input_tensors, Tensor(op)]},
        )
    unknown = [c.name for c in calls if c.name not in BUILTINS]
    if unknown:
        raise ScheduleError(
            f"decl_tensor_intrin '{op.name}': its body calls {unknown[0]!r}; schedlang maps "
            f"TE's warp-matrix builtins ({', '.join(BUILTINS)}) onto sl.intrin, and calls C "
            "functions (call_extern)"
        )
    names = {c.name for c in calls}
    shape = [_int(e) for e in op.shape]
    if len(shape) != 2 or not {shape[0], shape[1]} <= {8, 16, 32}:
        raise ScheduleError(
            f"decl_tensor_intrin '{op.name}': the compute's shape is {tuple(shape)}; the "
            "warp-matrix builtins work on tiles of TE's m16n16k16, m32n8k16 and m8n32k16 "
            "(16 x 16, 16 x 8, 32 x 16, 32 x 8, 8 x 16, 16 x 32, 8 x 32)"
        )
    if "tvm_mma_sync" in names:
        intrin = _checked(op, shape, _shipped(op, sl_intrin.mma_sync, n=shape[1], m=shape[0]))
        depth = [_int(iv.dom.extent) for iv in op.reduce_axis]
        if depth != [intrin.shape[2]]:
            raise ScheduleError(
                f"decl_tensor_intrin '{op.name}': tvm_mma_sync reduces over {intrin.shape[2]}, "
                f"but the compute reduces over {depth or 'nothing'}"
            )
        return intrin
    if "tvm_load_matrix_sync" in names:
        (load,) = [c for c in calls if c.name == "tvm_load_matrix_sync"]
        scope = load.args[0].buffer.scope
        if scope not in FRAGMENT_SCOPES:
            raise ScheduleError(
                f"decl_tensor_intrin '{op.name}': tvm_load_matrix_sync fills a buffer of scope "
                f"{scope!r}; it must be one of {', '.join(FRAGMENT_SCOPES[:3])}"
            )
        n = 16 if scope == "wmma.matrix_a" else shape[1]
        m = 16 if scope == "wmma.matrix_b" else shape[0]
        return _checked(op, shape, _shipped(op, sl_intrin.load_matrix, scope, n=n, m=m))
    if "tvm_store_matrix_sync" in names:
        return _checked(op, shape, _shipped(op, sl_intrin.store_matrix, n=shape[1], m=shape[0]))
    raise ScheduleError(
        f"decl_tensor_intrin '{op.name}': its body calls none of {', '.join(BUILTINS)}"
    )


def _bound(binds: dict, tensor: Tensor) -> DeclBuffer:
    for key, buffer in binds.items():
        if isinstance(key, Tensor) and key.op is tensor.op:
            return buffer
    return DeclBuffer(tensor.shape, tensor.dtype, tensor.name, "global", None)


def _calls(body: object) -> list[BuiltinCall | ExternCall | PackedCall]:
    if isinstance(body, (BuiltinCall, ExternCall, PackedCall)):
        return [body]
    if isinstance(body, (tuple, list)):
        return [c for part in body for c in _calls(part)]
    if body is None:
        return []
    raise ScheduleError(f"decl_tensor_intrin: a body is builtin calls (ib.get()), not {body!r}")


def _int(e: object) -> int:
    value = getattr(e, "value", e)
    if not isinstance(value, int):
        raise ScheduleError(f"decl_tensor_intrin: the compute's shape must be constant, not {e}")
    return value


def _shipped(op: ComputeOp, make, *args, **options) -> TensorIntrin:
    """The shipped intrinsic ``make(*args, **options)``; a tile shape it lacks (32 rows with
    16 columns) is the user's compute's, so the message names it."""
    try:
        return make(*args, **options)
    except ValueError as e:
        raise ScheduleError(f"decl_tensor_intrin '{op.name}': {e}") from None


def _checked(op: ComputeOp, shape: list[int], intrin: TensorIntrin) -> TensorIntrin:
    tile = list(intrin.shape[:2])
    if shape != tile:
        raise ScheduleError(
            f"decl_tensor_intrin '{op.name}': the compute is {' x '.join(map(str, shape))}, but "
            f"{intrin.name} works on a {' x '.join(map(str, tile))} tile"
        )
    return intrin
