"""How many elements a buffer occupies, when its shape says so at compile time.

Fixed-size memory (stack slots on the CPU, shared memory and registers on a GPU) needs a size
known when the code is generated; `constant_count` gives it, or None when the shape is symbolic.
Extents and strides are read through constant arithmetic (``64 * 72``, as a pass that pads
rows may leave them), not only as literals.
"""

from __future__ import annotations

from ...ir import dtype as dt
from ...ir.expr import Binary, Const, Expr
from ...loopir.core.nodes import Buffer

_FOLD = {"+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y}


def constant_count(buffer: Buffer) -> int | None:
    """Elements of `buffer` when its shape (and strides) are constants: the largest
    ``shape[d] * strides[d]`` with strides (storage_align pads rows), else the product."""
    shape = [constant_int(e) for e in buffer.shape]
    strides = [constant_int(e) for e in buffer.strides or ()]
    if None in shape or None in strides:
        return None
    shape = [max(0, n) for n in shape]
    if any(n == 0 for n in shape):
        return 0
    if buffer.strides is not None:
        return max(n * s for n, s in zip(shape, strides))
    count = 1
    for n in shape:
        count *= n
    return count


def constant_int(e: Expr) -> int | None:
    """The value of the integer expression `e` when it is constant arithmetic, else None."""
    if type(e) is Const:
        return int(e.value) if dt.is_int(e.dtype) else None
    if type(e) is Binary and e.op in _FOLD and dt.is_int(e.dtype):
        x, y = constant_int(e.a), constant_int(e.b)
        return None if x is None or y is None else _FOLD[e.op](x, y)
    return None
