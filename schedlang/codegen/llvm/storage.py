"""How many elements a buffer occupies, when its shape says so at compile time.

Fixed-size memory (stack slots on the CPU, shared memory and registers on a GPU) needs a size
known when the code is generated; `constant_count` gives it, or None when the shape is symbolic.
"""

from __future__ import annotations

from ...ir.expr import Const
from ...loopir.nodes import Buffer


def constant_count(buffer: Buffer) -> int | None:
    """Elements of `buffer` when its shape (and strides) are constants: the largest
    ``shape[d] * strides[d]`` with strides (storage_align pads rows), else the product."""
    exprs = (*buffer.shape, *(buffer.strides or ()))
    if not all(isinstance(e, Const) for e in exprs):
        return None
    shape = [max(0, int(e.value)) for e in buffer.shape]
    if any(n == 0 for n in shape):
        return 0
    if buffer.strides is not None:
        return max(n * int(s.value) for n, s in zip(shape, buffer.strides))
    count = 1
    for n in shape:
        count *= n
    return count
