"""``tvm.tir``: the index arithmetic and expression helpers TE algorithms call, and calls of
functions and intrinsics by name as TE spells them (``"tir.exp"`` is schedlang's ``exp``)."""

from __future__ import annotations

import enum

import schedlang as _sl
from schedlang import (  # noqa: F401 - re-exported under TE's names
    all,
    any,
    call_pure_extern,
    ceil,
    const,
    exp,
    floor,
    if_then_else,
    log,
    popcount,
    sqrt,
)
from schedlang import if_then_else as Select  # noqa: F401, N812
from schedlang.ir.expr import Call as _Call
from schedlang.ir.intrinsics import plain_name

from .. import tir_expr as expr  # noqa: F401 - tvm.tir.expr.IntImm, ...
from ..data_layout import bijective_layout, layout  # noqa: F401
from ..ir_module import PrimFunc  # noqa: F401
from ..tensor_intrin import BUILTINS, BuiltinCall, call_packed, decl_buffer  # noqa: F401
from ..tir_expr import Any, Cast, FloatImm, IntImm, PrimExpr, SizeVar, Var  # noqa: F401
from . import ir_builder, stmt_functor  # noqa: F401 - tvm.tir.ir_builder, tvm.tir.stmt_functor


class CallEffectKind(enum.IntEnum):
    """TE's effect kinds of an intrinsic; schedlang's calls are all pure."""

    ExprAnnotation = 0
    Pure = 1
    ReadState = 2
    UpdateState = 3
    Opaque = 4


class ForKind:
    """TE's loop kinds, as schedlang's loops (a loop-IR ``For`` or a hybrid script's loop)
    name them in their `kind`."""

    SERIAL = "serial"
    PARALLEL = "parallel"
    VECTORIZED = "vectorized"
    UNROLLED = "unrolled"
    THREAD_BINDING = "bound"


class Op:
    """The op a call calls, by TE's name (``tir.exp``)."""

    def __init__(self, name: str) -> None:
        self.name = name


class Call:
    """A math call or intrinsic as TE's lowering rules see it: ``op.name`` (``"tir.exp"``),
    ``dtype`` and ``args``; a rule returns an expression, or the call itself to keep it."""

    def __init__(self, call: _Call) -> None:
        self.call = call
        self.op = Op("tir." + plain_name(call))
        self.dtype = call.dtype
        self.args = call.args


def call_intrin(dtype: str, func_name: str, *args: object):
    """A call of an intrinsic by name; TE's warp-matrix builtins (``tir.tvm_mma_sync``...)
    are recorded for the body of a `te.decl_tensor_intrin`."""
    name = _schedlang_name(func_name)
    if name in BUILTINS:
        return BuiltinCall(name, args)
    return _sl.call_intrin(dtype, name, *args)


def call_extern(dtype: str, func_name: str, *args: object):
    """A call of an external C function, in the body of a `te.decl_tensor_intrin`."""
    return _sl.call_extern(dtype, func_name, *args)


def _schedlang_name(name: str) -> str:
    return name[len("tir.") :] if name.startswith("tir.") else name


def floordiv(a, b):
    return a // b


def floormod(a, b):
    return a % b


indexdiv, indexmod = floordiv, floormod


def truncdiv(a, b):
    """Division rounded toward zero (C's): the floor quotient, plus one where the remainder
    is not zero and the operands' signs differ."""
    q = a // b
    return if_then_else(_differs(a, b), q + 1, q)


def truncmod(a, b):
    """The remainder of `truncdiv`: it has the sign of `a`."""
    r = a % b
    return if_then_else(_differs(a, b), r - b, r)


def _differs(a, b):
    return all(a % b != 0, any(all(a < 0, b > 0), all(a >= 0, b < 0)))
