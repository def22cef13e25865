"""Asynchronous copies (`AsyncCopy`, `AsyncCommit`, `AsyncWait`): what every target shares.

An `AsyncCopy` moves `lanes` consecutive elements of the last dimension of one buffer into
another, 4, 8 or 16 bytes, and the data is promised only after the copying thread's
`AsyncWait` for its group. A target with no copy engine (the CPU) may therefore copy at once and
make commit and wait nothing: every program that reads the data only where the loop IR promises
it reads the same values. `check_async_copy` verifies the structure the loop IR promises (an
`InternalError` where it does not hold: a pass built the statement wrong), and
`emit_synchronous_copy` is that immediate copy, one vector load and one vector store of the
elements' storage type (bits moved as they are, as ``cp.async`` moves them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir

from ...errors import InternalError
from ...ir import dtype as dt
from ...ir.expr import Const
from ...loopir.core.nodes import AsyncCopy, Buffer
from .control import if_else
from .types import storage_type

if TYPE_CHECKING:
    from .stmt import StmtEmitter

COPY_BYTES = (4, 8, 16)  # the sizes cp.async moves


def check_async_copy(em: StmtEmitter, s: AsyncCopy) -> int:
    """The bytes `s` moves, after checking the loop IR's promises: one dtype at both ends, a
    size ``cp.async`` has, a contiguous last dimension at both ends, neither buffer in
    registers, and not inside a vectorized loop (whose lanes would each be a copy)."""
    if s.dst.dtype != s.src.dtype:
        raise InternalError(
            f"an asynchronous copy from the {s.src.dtype} buffer '{s.src.name}' to the "
            f"{s.dst.dtype} buffer '{s.dst.name}'; a copy moves elements unconverted"
        )
    nbytes = s.lanes * dt.itemsize(s.dst.dtype)
    if s.lanes < 1 or nbytes not in COPY_BYTES:
        raise InternalError(
            f"an asynchronous copy of {s.lanes} {s.dst.dtype} elements ({nbytes} bytes) into "
            f"'{s.dst.name}'; it must move 4, 8 or 16 bytes"
        )
    for buffer, index in ((s.dst, s.dst_index), (s.src, s.src_index)):
        if len(index) != len(buffer.shape) or not buffer.shape:
            raise InternalError(
                f"'{buffer.name}' ({len(buffer.shape)} dimensions) copied asynchronously at "
                f"{len(index)} indices"
            )
        if s.lanes > 1 and not last_dim_contiguous(buffer):
            raise InternalError(
                f"an asynchronous copy runs along the last dimension of '{buffer.name}', whose "
                "elements are not adjacent in memory (its last stride is not 1)"
            )
        if buffer in em.registers.values:
            raise InternalError(f"'{buffer.name}' is in registers but is copied asynchronously")
    if em.lanes is not None:
        raise InternalError(
            f"an asynchronous copy into '{s.dst.name}' inside the vectorized loop "
            f"{em.lane.name if em.lane is not None else '?'}"
        )
    return nbytes


def last_dim_contiguous(buffer: Buffer) -> bool:
    """Whether neighbours along `buffer`'s last dimension are neighbours in memory."""
    if buffer.strides is None:
        return True
    last = buffer.strides[-1]
    return isinstance(last, Const) and dt.is_int(last.dtype) and int(last.value) == 1


def emit_synchronous_copy(em: StmtEmitter, s: AsyncCopy) -> None:
    """`s` done at once: its elements loaded as one vector and stored as one (alignment
    stated from the indices, `alignment`)."""
    check_async_copy(em, s)
    vector_t = ir.VectorType(storage_type(s.dst.dtype), s.lanes)
    b = em.b
    target = em.element(s.dst, s.dst_index)
    align = em.align(s.dst, s.dst_index)
    if s.when is None:
        source = em.element(s.src, s.src_index)
        value = b.load(source, typ=vector_t, align=em.align(s.src, s.src_index))
        b.store(value, target, align=align)
        return
    with if_else(b, em.condition(s.when)) as (then, otherwise):
        with then:
            source = em.element(s.src, s.src_index)
            value = b.load(source, typ=vector_t, align=em.align(s.src, s.src_index))
            b.store(value, target, align=align)
        with otherwise:
            b.store(ir.Constant(vector_t, None), target, align=align)
