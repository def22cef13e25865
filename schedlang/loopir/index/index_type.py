"""The integer type of a kernel's loop variables and index arithmetic: int32 unless a size or
a shape needs more.

int32 is the default because GPU code is faster with 32-bit index math and almost every tensor
has fewer than 2**31 elements. A kernel is lowered in int64 when one of its sizes is declared
wider (``sl.var("n", dtype="int64")``, or an unsigned 32-bit size) or a constant extent or
element count of one of its tensors is past int32's range, so that its loops hold every value
they take. A call binding sizes past the range of an int32 kernel is refused
(`runtime.size_limits`), never wrapped.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from ...ir import dtype as dt
from ...ir.expr import Const, Expr, Var
from ...ir.tensor import ComputeOp, Operation
from ...ir.visit import walk
from ..core.nodes import Buffer

INT32_MAX = 2**31 - 1


def index_dtype(ops: Iterable[Operation], sizes: Iterable[Var], buffers: Iterable[Buffer]) -> str:
    """ "int64" when a size is wider than int32 or a constant extent, bound or element count of
    `ops` and `buffers` does not fit int32; "int32" otherwise."""
    extents: list[Expr] = list(sizes)
    for op in ops:
        extents += op.shape
        if isinstance(op, ComputeOp):
            extents += [iv.var for iv in (*op.axis, *op.reduce_axis)]
            extents += [iv.dom.min for iv in op.reduce_axis]
    for e in extents:
        for node in walk(e):
            if isinstance(node, (Var, Const)) and _wide(node):
                return "int64"
    for buffer in buffers:
        count = _constant_count(buffer)
        if count is not None and count > INT32_MAX:
            return "int64"
    return "int32"


def _wide(e: Var | Const) -> bool:
    if isinstance(e, Const):
        return dt.is_int(e.dtype) and abs(int(e.value)) > INT32_MAX
    return dt.bits(e.dtype) >= 32 and e.dtype != "int32"


def _constant_count(buffer: Buffer) -> int | None:
    """The largest flat index of `buffer` plus one, when its layout is constant."""
    layout = (*buffer.shape, *(buffer.strides or ()))
    if not all(isinstance(e, Const) for e in layout):
        return None
    shape = [int(n) for n in buffer.shape]
    if buffer.strides is None:
        return math.prod(shape)
    strides = [int(s) for s in buffer.strides]
    return 1 + sum((n - 1) * s for n, s in zip(shape, strides)) if all(shape) else 0
