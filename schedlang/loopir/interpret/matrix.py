"""Warp-collective tensor-core operations (`MatrixOp`) for `schedlang.loopir.interpret`.

Fragments are kept exactly as the hardware keeps them (`schedlang.loopir.memory.fragments`): a
fragment buffer is a flat array of `fragments.lane_size` elements per thread, and each lane holds
the elements of each tile that `fragments.layout` gives it. A kernel that only works by an accident
of the layout (reading a fragment as if lane ``l`` held row ``l``, say) therefore fails here as
it would on a GPU, instead of passing on a friendlier layout.

An op runs for every active warp of the block at once, vectorised over arrays indexed
``(warp, lane, slot)``; a warpgroup's op (``wgmma``, its accumulator's fill and store) likewise
for every group of 4 warps, ``(group, thread, slot)``, its operands read whole from shared
memory. The compiler validates the op's structure once (`matrix_spec`); the
runtime checks what depends on the run: the block is 32 threads wide, each warp is entirely
active or entirely inactive, the tile bases agree over each warp, and accesses are in bounds.

Race tracking: an element a fragment load reads from shared memory counts as read by the whole
warp (no single lane: ``ldmatrix`` gathers rows from addresses supplied by other lanes), so it
conflicts with any thread's write in the same barrier interval. An element a store writes counts
as written by the lane that holds it in the accumulator.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from ...errors import InternalError
from ...ir import dtype as dt
from ..core.nodes import FRAGMENT_SCOPES, MatrixOp, Tile
from ..memory.fragments import ACCUMULATORS, DTYPES, WARP, layout, slots, threads
from .mbarrier import check_read
from .runtime import MANY, UNIFORM, Mem, RaceError, Runtime

_HEADS = {
    "fill": "fill_fragment",
    "load": "load_matrix",
    "mma": "mma_sync",
    "store": "store_matrix",
}
_SOURCES = {"fill": 0, "load": 1, "mma": 2, "store": 1}
_MEMORY = ("global", "shared", "local")


@dataclass(frozen=True)
class TileSpec:
    """What the runtime needs to know of a `Tile` besides its buffer and base values."""

    name: str
    scope: str
    dtype: str
    dims: tuple[int, int]
    shape: tuple[int, int]
    extents: tuple[int, ...] | None  # a fragment's constant shape; None for other buffers

    @property
    def fragment(self) -> bool:
        return self.scope in FRAGMENT_SCOPES


@dataclass(frozen=True)
class MatrixSpec:
    """A validated `MatrixOp`: its op, its tiles (``dst`` first, then ``srcs``) and the name
    error messages call it by."""

    op: str
    tiles: tuple[TileSpec, ...]
    head: str
    clipped: bool = False  # a store keeps only the elements inside its buffer's shape
    group: int = WARP  # the threads that run it together: a warp, or a warpgroup


def matrix_spec(s: MatrixOp) -> MatrixSpec:
    """Check the structure of `s` (scopes, dtypes, shapes of its tiles) once, at compile time,
    so the runtime only checks what depends on the run."""
    if s.op not in _HEADS:
        raise InternalError(f"unknown matrix op {s.op!r} (expected one of {', '.join(_HEADS)})")
    head = _HEADS[s.op]
    if len(s.srcs) != _SOURCES[s.op]:
        raise InternalError(f"{head} takes {_SOURCES[s.op]} source tile(s), got {len(s.srcs)}")
    if (s.value is not None) != (s.op == "fill"):
        raise InternalError(f"{head} {'needs' if s.op == 'fill' else 'takes no'} value")
    tiles = tuple(_tile_spec(t, head) for t in (s.dst, *s.srcs))
    scopes = tuple(t.scope for t in tiles)
    accumulator = next((x for x in scopes if x in ACCUMULATORS), "wmma.accumulator")
    group = threads(accumulator)
    if s.op == "fill":
        expected = (accumulator,)
    elif s.op == "load":
        expected = (tiles[0].scope if tiles[0].fragment else "a fragment", "memory")
    elif s.op == "mma" and group > WARP:  # A from shared memory or from registers
        a_scope = accumulator if scopes[1] == accumulator else "shared"
        expected = (accumulator, a_scope, "shared")
    elif s.op == "mma":
        expected = ("wmma.accumulator", "wmma.matrix_a", "wmma.matrix_b")
    else:
        expected = ("memory", accumulator)
    got = tuple(
        "memory" if scope in _MEMORY and expected.count("shared") == 0 else scope
        for scope in scopes
    )
    if got != expected:
        raise InternalError(
            f"{head} on tiles of scopes {scopes}; it takes {expected} (dst first, then srcs)"
        )
    if s.op in ("load", "store"):
        if tiles[0].shape != tiles[1].shape:
            raise InternalError(f"{head} from a {tiles[1].shape} tile to a {tiles[0].shape} one")
        if s.op == "load" and tiles[0].dtype != tiles[1].dtype:
            raise InternalError(
                f"{head} of {tiles[1].dtype} '{tiles[1].name}' into {tiles[0].dtype} fragment "
                f"'{tiles[0].name}': a load does not convert"
            )
    if s.op == "mma":
        c, a, b = tiles
        float8 = group > WARP and dt.is_float8(a.dtype) and dt.is_float8(b.dtype)
        if (a.dtype != b.dtype and not float8) or b.shape[1] != c.shape[1]:
            raise InternalError(
                f"{head} of {a.dtype} {a.shape} @ {b.dtype} {b.shape} into {c.shape}: operands "
                "must share a dtype (or both be 8-bit floats, for a warpgroup) and the "
                "accumulator must have B's columns"
            )
    if s.clipped and s.op != "store":
        raise InternalError(f"{head} cannot be clipped: only a store keeps part of its tile")
    head = head.replace("mma_sync", "wgmma") if group > WARP else head
    return MatrixSpec(s.op, tiles, head, s.clipped, group)


def _tile_spec(t: Tile, head: str) -> TileSpec:
    buffer = t.buffer
    ndim = len(buffer.shape)
    dims, shape = tuple(t.dims), tuple(t.shape)
    if len(dims) != 2 or dims[0] == dims[1] or not all(0 <= d < ndim for d in dims):
        raise InternalError(f"{head}: tile dims {dims} of '{buffer.name}' ({ndim} dimensions)")
    if len(shape) != 2 or min(shape) <= 0:
        raise InternalError(f"{head}: tile shape {shape} of '{buffer.name}'")
    extents = None
    if buffer.scope in FRAGMENT_SCOPES:
        slots(buffer.scope, shape)  # raises for a shape the scope does not have
        if dims != (ndim - 2, ndim - 1):
            raise InternalError(
                f"{head}: a tile of fragment '{buffer.name}' must run along its last two "
                f"dimensions, not {dims}"
            )
        if buffer.dtype not in DTYPES[buffer.scope]:
            raise InternalError(
                f"fragment '{buffer.name}' ({buffer.scope}) is {buffer.dtype}; the tensor cores "
                f"take {' or '.join(DTYPES[buffer.scope])}"
            )
        extents = tuple(int(getattr(n, "value", -1)) for n in buffer.shape)
    elif buffer.scope not in _MEMORY:
        raise InternalError(f"buffer '{buffer.name}' has the unknown scope {buffer.scope!r}")
    return TileSpec(buffer.name, buffer.scope, buffer.dtype, dims, shape, extents)


@cache
def _layout_arrays(scope: str, shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """`fragments.layout` as two (lane, slot) arrays: the row and the column each slot holds."""
    held = np.array(layout(scope, shape), np.int64)
    return held[..., 0], held[..., 1]


def execute(rt: Runtime, spec: MatrixSpec, mask, tiles: tuple, value) -> None:
    """Run `spec` on every warp of the block that `mask` (None: all threads) has active.
    `tiles` holds ``(mem, base values, fragment offset or None)`` per tile of `spec`."""
    warps = _active_warps(rt, spec, mask)
    size = spec.group
    lanes = (warps * size)[:, None, None] + np.arange(size)[None, :, None]  # (warp, lane, 1)
    bases = [
        tuple(_per_warp(rt, spec, b, warps, f"the base of '{t.name}'") for b in base)
        for t, (_, base, _) in zip(spec.tiles, tiles)
    ]
    slots_of = [
        _slots(rt, spec, t, base, _per_warp(rt, spec, off, warps, "a fragment offset"), warps)
        if t.fragment
        else None
        for t, base, (_, _, off) in zip(spec.tiles, bases, tiles)
    ]
    mems = [m for m, _, _ in tiles]
    dst = spec.tiles[0]
    if spec.op == "fill":
        filled = _per_warp(rt, spec, value, warps, "the fill value")
        mems[0].array[lanes, slots_of[0]] = filled[:, None, None]
    elif spec.op == "load":
        rows, cols = _layout_arrays(dst.scope, dst.shape)
        src = spec.tiles[1]
        idx = _elements(rt, spec, src, mems[1], bases[1], rows, cols, warps)
        if mems[1].lanes:
            values = mems[1].array[(lanes, *idx)]  # each lane reads its own copy
        else:
            values = mems[1].array[idx]
            if src.scope == "shared":
                _warp_read(rt, spec, mems[1], idx, warps)
        mems[0].array[lanes, slots_of[0]] = values
    elif spec.op == "mma":
        acc = mems[0].array
        c = _gather(acc[lanes, slots_of[0]], dst)
        if size > WARP:  # a warpgroup's operands: whole tiles of shared memory, or A's
            a_tile, b_tile = spec.tiles[1:]  # in registers as the accumulator's layout holds it
            if a_tile.fragment:
                a = _gather(mems[1].array[lanes, slots_of[1]], a_tile)
            else:
                a = _whole(rt, spec, a_tile, mems[1], bases[1], warps)
            b = _whole(rt, spec, b_tile, mems[2], bases[2], warps)
        else:
            a = _gather(mems[1].array[lanes, slots_of[1]], spec.tiles[1])
            b = _gather(mems[2].array[lanes, slots_of[2]], spec.tiles[2])
        f32 = np.dtype("float32")
        if a.dtype == f32:  # TF32: the operands rounded to a 10-bit mantissa first
            a, b = tf32(a), tf32(b)
        d = np.matmul(a.astype(f32), b.astype(f32)) + c.astype(f32)
        rows, cols = _layout_arrays(dst.scope, dst.shape)
        acc[lanes, slots_of[0]] = d.astype(acc.dtype)[:, rows, cols]
    else:
        src = spec.tiles[1]
        rows, cols = _layout_arrays(src.scope, src.shape)
        values = _convert(mems[1].array[lanes, slots_of[1]], dst.dtype)
        keep = None
        if spec.clipped:  # only the elements inside the buffer exist
            keep = _inside(mems[0], dst, bases[0], rows, cols, len(warps))
        idx = _elements(rt, spec, dst, mems[0], bases[0], rows, cols, warps, keep)
        _scatter(rt, mems[0], idx, lanes, values, keep)


def _active_warps(rt: Runtime, spec: MatrixSpec, mask) -> np.ndarray:
    """The warps (warpgroups) that run the op: each with an active thread, which must have
    all its 32 (128)."""
    width, size = rt.extents[0], spec.group
    if width != WARP or not rt.threaded:
        raise InternalError(
            f"{spec.head} needs a block whose threadIdx.x extent is exactly {WARP} (a warp per "
            f"threadIdx.y/z), but this block's threadIdx.x extent is {width}"
        )
    if size > WARP and (len(rt.extents) < 2 or rt.extents[1] != size // WARP):
        have = rt.extents[1] if len(rt.extents) > 1 else 1
        raise InternalError(
            f"{spec.head} is run by a warpgroup, the {size // WARP} warps of threadIdx.y, but "
            f"this block's threadIdx.y extent is {have}"
        )
    if mask is None:
        return np.arange(rt.size // size)
    grid = mask.reshape(-1, size)
    active = grid.any(axis=1)
    partial = np.flatnonzero(active & ~grid.all(axis=1))
    if len(partial):
        w = int(partial[0])
        on = w * size + int(np.flatnonzero(grid[w])[0])
        off = w * size + int(np.flatnonzero(~grid[w])[0])
        who = "warp" if size == WARP else "warpgroup"
        raise InternalError(
            f"divergent {who} collective: thread {rt.thread_str(on)} reaches the {spec.head} "
            f"that thread {rt.thread_str(off)} of the same {who} skips (a guard or a loop "
            f"bound on threadIdx around it); all {size} threads of a {who} must run it together"
        )
    return np.flatnonzero(active)


def _per_warp(rt: Runtime, spec: MatrixSpec, x, warps: np.ndarray, what: str) -> np.ndarray:
    """The value of `x` on each warp of `warps`; it must be the same on all lanes of a warp."""
    if not isinstance(x, np.ndarray):
        return np.full(len(warps), x)
    per = x.reshape(-1, spec.group)[warps]
    first = per[:, :1]
    same = per == first
    if per.dtype.kind == "f":
        same |= np.isnan(per) & np.isnan(first)
    if not same.all():
        w, lane = (int(k) for k in np.argwhere(~same)[0])
        a, b = int(warps[w]) * spec.group, int(warps[w]) * spec.group + lane
        raise InternalError(
            f"{what} in {spec.head} differs within a warp: {per[w, 0]} on thread "
            f"{rt.thread_str(a)}, {per[w, lane]} on thread {rt.thread_str(b)}; a warp runs a "
            "matrix op on one tile"
        )
    return per[:, 0]


def _slots(rt: Runtime, spec: MatrixSpec, t: TileSpec, base, offset, warps) -> np.ndarray:
    """The (warp, 1, slot) positions of tile `t` in its lanes' fragment storage, after checking
    that its base is an aligned tile inside the fragment."""
    extents = t.extents
    lead = len(extents) - 2
    for d, (b, n) in enumerate(zip(base, extents)):
        size = t.shape[d - lead] if d >= lead else 1
        bad = (b < 0) | (b + size > n) | (b % size != 0)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            where = ", ".join(str(int(x[k])) for x in base)
            raise InternalError(
                f"{spec.head} of warp {int(warps[k])}: the {t.shape} tile of fragment "
                f"'{t.name}' at [{where}] is not an aligned tile of its shape {extents}"
            )
    count = t.shape[0] * t.shape[1] // threads(t.scope)
    return offset.astype(np.int64)[:, None, None] + np.arange(count)[None, None, :]


def tf32(values: np.ndarray) -> np.ndarray:
    """float32 `values` rounded to TF32 as ``cvt.rna.tf32.f32`` does: to the nearest value with
    a 10-bit mantissa, ties away from zero; infinities and NaNs unchanged."""
    bits = np.ascontiguousarray(values, np.float32).view(np.uint32)
    finite = (bits & 0x7F800000) != 0x7F800000
    rounded = np.where(finite, (bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000), bits)
    return rounded.astype(np.uint32).view(np.float32)


def _gather(values: np.ndarray, t: TileSpec) -> np.ndarray:
    """The (warp, row, column) matrices that the lanes' (warp, lane, slot) `values` hold."""
    rows, cols = _layout_arrays(t.scope, t.shape)
    out = np.empty((len(values), *t.shape), values.dtype)
    out[:, rows, cols] = values
    return out


def _whole(rt: Runtime, spec: MatrixSpec, t: TileSpec, mem: Mem, base, warps) -> np.ndarray:
    """The (group, row, column) tiles of shared memory a warpgroup's op reads, recorded as
    read by the whole group."""
    rows = np.arange(t.shape[0])[:, None] + np.zeros(t.shape[1], np.int64)[None, :]
    cols = np.arange(t.shape[1])[None, :] + np.zeros(t.shape[0], np.int64)[:, None]
    idx = _elements(rt, spec, t, mem, base, rows, cols, warps)
    _warp_read(rt, spec, mem, idx, warps)
    return mem.array[idx]


def _inside(mem: Mem, t: TileSpec, base, rows, cols, warps: int) -> np.ndarray:
    """Which (warp, lane, slot) elements of a tile lie inside `mem`'s shape."""
    keep = np.ones((warps, *rows.shape), bool)
    for d, offsets in ((t.dims[0], rows), (t.dims[1], cols)):
        i = np.asarray(base[d], np.int64)[:, None, None] + offsets
        keep &= i < int(mem.shape[d])
    return keep


def _elements(rt: Runtime, spec, t: TileSpec, mem: Mem, base, rows, cols, warps, keep=None):
    """The (warp, lane, slot) indices into `mem` of the tile elements at (`rows`, `cols`),
    bounds-checked (those `keep` leaves out excepted): numpy would wrap a negative index
    silently."""
    shape = (len(warps), *rows.shape)
    idx = []
    for d, n in enumerate(mem.shape):
        i = np.asarray(base[d], np.int64)[:, None, None]
        if d == t.dims[0]:
            i = i + rows
        elif d == t.dims[1]:
            i = i + cols
        i = np.broadcast_to(i, shape)
        bad = (i < 0) | (i >= int(n))
        if keep is not None:
            bad &= keep
        if bad.any():
            k = tuple(int(x) for x in np.argwhere(bad)[0])
            where = [int(np.broadcast_to(np.asarray(b)[:, None, None], shape)[k]) for b in base]
            where[t.dims[0]] += int(rows[k[1:]])
            where[t.dims[1]] += int(cols[k[1:]])
            who = f" by the {spec.head} of warp {int(warps[k[0]])} (lane {k[1]})"
            rt.out_of_bounds(mem, where, who)
        idx.append(i)
    return tuple(idx)


def _warp_read(rt: Runtime, spec: MatrixSpec, mem: Mem, idx: tuple, warps) -> None:
    """Record a warp's reads of shared memory: read by the whole warp (see the module)."""
    flat = np.ravel_multi_index(idx, mem.shape).ravel()
    writer = mem.w_tid[flat]
    bad = (mem.w_at[flat] == rt.interval) & (writer != UNIFORM)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        per_warp = len(flat) // len(warps)
        raise RaceError(
            f"race on shared buffer '{mem.name}' at {rt._element(mem, flat[k])}: the "
            f"{spec.head} of warp {int(warps[k // per_warp])} reads it after thread "
            f"{rt.thread_str(int(writer[k]))} wrote it with no barrier in between (barrier "
            f"interval {rt.interval}); a barrier() must separate them"
        )
    if mem.landed is not None:  # read by every lane of the warps
        readers = np.repeat(np.asarray(warps) * spec.group, len(flat) // len(warps))
        check_read(rt, mem, flat, readers, spec.group // WARP)
    rt._track_read(mem, flat, np.full(len(flat), MANY, np.int64))


def _scatter(rt: Runtime, mem: Mem, idx: tuple, lanes: np.ndarray, values: np.ndarray, keep=None):
    """Store `values` at `idx`, each element by the lane that holds it (those `keep` selects)."""
    if keep is not None:
        lanes = np.broadcast_to(lanes, values.shape)[keep]
        idx = tuple(i[keep] for i in idx)
        values = values[keep]
    if mem.lanes:
        mem.array[(lanes, *idx)] = values
        return
    flat = np.ravel_multi_index(idx, mem.shape).ravel()
    tids = np.broadcast_to(lanes, values.shape).ravel()
    rt._check_duplicates(mem, flat, tids)
    if mem.scope == "shared":
        rt._track_write(mem, flat, tids)
    mem.array[idx] = values


def _convert(values: np.ndarray, dtype: str) -> np.ndarray:
    """Accumulator values in `dtype`, as the interpreter's casts convert them."""
    if dt.is_int(dtype):
        return np.asarray(dt.float_to_int(values, dtype))
    return values.astype(dt.to_numpy(dtype))
