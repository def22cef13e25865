"""Which block and which thread write each element of a tensor, found by running the kernel.

The lowered function is run by the loop-IR interpreter with one change: next to every store
to the tensor, a store of the indices of the enclosing hardware loops (``blockIdx.x/y/z``,
``threadIdx.x/y/z``) into a record buffer of the tensor's shape. The answer is then the one
the code gives, guards and tails included, not a model of it. On the CPU, parallel loops play
the part of blocks (each of their iterations is a task of the thread pool) and there are no
threads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ..ir import dtype as dt
from ..ir.expr import Var, const
from ..loopir.core.nodes import Buffer, For, LoweredFunc, Seq, Stmt, Store
from ..loopir.core.visit import rebuild_stmt, walk_stmt
from ..loopir.interpret import run
from .sizes import bind_sizes, shape_of

BLOCK_TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z")
THREAD_TAGS = ("threadIdx.x", "threadIdx.y", "threadIdx.z")
UNWRITTEN = -1


@dataclass(frozen=True)
class TileMap:
    """For each element of `tensor`: `blocks[..., d]` and `threads[..., d]` are the block and
    thread indices along x, y, z of the instance that last wrote it (`UNWRITTEN` where none
    did). `block_kind` is ``"block"`` on a GPU, ``"parallel task"`` on a CPU, ``None`` when the
    function has neither."""

    tensor: str
    blocks: np.ndarray
    threads: np.ndarray
    block_kind: str | None

    @property
    def block_ids(self) -> np.ndarray:
        """One number per block, x fastest (as CUDA numbers blocks), per element."""
        return _linear(self.blocks)

    @property
    def thread_ids(self) -> np.ndarray:
        """One number per thread within its block, x fastest, per element."""
        return _linear(self.threads)


def tile_map(kernel_or_lowered: object, tensor: object, sizes: Mapping[object, int]) -> TileMap:
    """Run `kernel_or_lowered` (a kernel or a `LoweredFunc`) at `sizes` and record who writes
    each element of `tensor` (a tensor or the name of an argument)."""
    func = getattr(kernel_or_lowered, "lowered", kernel_or_lowered)
    if not isinstance(func, LoweredFunc):
        raise TypeError(f"need a kernel or a LoweredFunc, not {type(kernel_or_lowered).__name__}")
    name = getattr(tensor, "name", tensor)
    target = next((b for b in func.params if b.name == name), None)
    if target is None:
        names = ", ".join(b.name for b in func.params)
        raise ValueError(f"'{name}' is not an argument of '{func.name}' (its arguments: {names})")
    record = Buffer(f"{target.name}.writer", (*target.shape, const(6)), "int32")
    loops = [x for x in walk_stmt(func.body) if isinstance(x, For)]
    parallel = not any(x.kind == "bound" for x in loops)
    body = _Recorder(target, record, parallel).stmt(func.body, {})
    recording = LoweredFunc(func.name, (*func.params, record), func.sizes, body, func.index_dtype)
    bound = bind_sizes([b.shape for b in func.params], sizes, "tile_map")
    arrays = [_filled(b, bound) for b in recording.params]
    arrays[-1][...] = UNWRITTEN
    run(recording, arrays, bound)
    written = arrays[-1]
    kind = "block"
    if parallel:
        kind = "parallel task" if any(x.kind == "parallel" for x in loops) else None
    return TileMap(target.name, written[..., :3], written[..., 3:], kind)


def _filled(buffer: Buffer, bound: Mapping[Var, int]) -> np.ndarray:
    """Ones for every argument: the values do not matter, only who writes where."""
    return np.ones(shape_of(buffer.shape, bound), dt.to_numpy(buffer.dtype))


class _Recorder:
    """Adds the record stores after each store to `target`, knowing the enclosing loops."""

    def __init__(self, target: Buffer, record: Buffer, parallel: bool) -> None:
        self.target, self.record, self.parallel = target, record, parallel

    def stmt(self, s: Stmt, loops: dict[str, Var]) -> Stmt:
        if isinstance(s, Store) and s.buffer is self.target:
            stores = [s]
            for k, tag in enumerate(BLOCK_TAGS + THREAD_TAGS):
                value = loops.get(tag, const(0))
                stores.append(Store(self.record, (*s.indices, const(k)), value))
            return Seq(tuple(stores))
        if isinstance(s, For):
            tag = s.thread if s.kind == "bound" else None
            if self.parallel and s.kind == "parallel":
                tag = next((t for t in BLOCK_TAGS if t not in loops), None)
            if tag is not None:
                loops = {**loops, tag: s.var}
            return For(s.var, s.min, s.extent, s.kind, self.stmt(s.body, loops), s.thread)
        return rebuild_stmt(s, lambda e: e, lambda child: self.stmt(child, loops))


def _linear(indices: np.ndarray) -> np.ndarray:
    """x + X * (y + Y * z) with X, Y the extents seen; UNWRITTEN stays."""
    extents = indices.reshape(-1, 3).max(axis=0, initial=0) + 1
    x, y, z = indices[..., 0], indices[..., 1], indices[..., 2]
    ids = x + extents[0] * (y + extents[1] * z)
    return np.where(x == UNWRITTEN, UNWRITTEN, ids)
