"""The memory and thread model behind `schedlang.loopir.interpret`.

The interpreter compiles a loop nest to Python; that code calls into one `Runtime` per run for
everything that is not plain scalar arithmetic:

- *Thread grid.* The threads of a block are numpy lanes: lane ``l`` has
  ``threadIdx = (l % X, l // X % Y, l // (X * Y))``. Inside a loop bound to ``threadIdx.*``
  every value may be an array over the lanes, and each statement runs under a mask of active
  lanes (a bool array; a mask is never empty and never modified in place).
- *Memory.* ``global`` buffers exist once, ``shared`` ones once per execution of their
  `Allocate` (per block), ``local`` ones per thread: they get a leading lane dimension when the
  function has thread loops. Fragments (tensor-core tiles, `interpret.matrix`) are per thread
  too: a lane dimension and each lane's flat share of the warp's tiles. New buffers hold NaN
  (floats), True (bool) or -123456789 (ints, as the dtype wraps it), so reads of uninitialised
  memory show up in results.
- *Races.* For each shared element we remember the last writer and reader (a lane, `UNIFORM`
  for code outside thread loops that every thread runs alike, `MANY` for several readers) and
  the barrier interval of the access. An access that conflicts with another thread's access in
  the same interval (read after write, write after write or read) is a `RaceError`, and so is a
  store where two active threads write one global or shared element. A shared element that an
  asynchronous copy is still writing (`interpret.asynccopy`) counts `inflight`: any access to it
  then is a `RaceError` too.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ...errors import InternalError
from ...ir import dtype as dt
from ...ir.evaluate import combine
from ..core.nodes import FRAGMENT_SCOPES

UNIFORM = -1  # code outside thread loops: every thread of the block runs it alike
MANY = -2  # several threads read the element in this interval
_NOBODY = -3
_TAGS = ("threadIdx.x", "threadIdx.y", "threadIdx.z")


class RaceError(InternalError):
    """Two threads access one element without a barrier between them (a data race)."""


class DivergentBarrierError(InternalError):
    """A barrier is reached by some but not all threads of a block."""


class Mem:
    """A buffer during a run: its array and, for shared memory, the race-tracking shadows."""

    __slots__ = (
        "name",
        "scope",
        "array",
        "lanes",
        "shape",
        "w_tid",
        "w_at",
        "r_tid",
        "r_at",
        "inflight",
        "landed",
    )

    def __init__(self, name: str, scope: str, array: np.ndarray, lanes: bool) -> None:
        self.name, self.scope, self.array, self.lanes = name, scope, array, lanes
        # Per element, the async copies still writing it (`interpret.asynccopy`); None until
        # the first copy to this buffer, so that buffers without copies pay nothing.
        self.inflight: np.ndarray | None = None
        # Per element, the barrier slot and phase a bulk copy landed it in (`interpret.mbarrier`)
        self.landed: np.ndarray | None = None
        self.shape = array.shape[1:] if lanes else array.shape
        if scope == "shared":
            size = int(np.prod(self.shape, dtype=np.int64))
            self.w_tid = np.full(size, _NOBODY, np.int64)
            self.r_tid = np.full(size, _NOBODY, np.int64)
            self.w_at = np.full(size, -1, np.int64)
            self.r_at = np.full(size, -1, np.int64)


def garbage(dtype: str) -> object:
    """The value fresh memory of `dtype` holds: NaN, True, or -123456789 wrapped to the dtype."""
    if dt.is_float(dtype):
        return np.nan
    if dtype == "bool":
        return True
    return np.array(-123456789, np.int64).astype(dt.to_numpy(dtype))


class Runtime:
    """State of one run: the thread grid, the barrier count, and the memory operations."""

    def __init__(self, threaded: bool) -> None:
        self.threaded = threaded
        self.interval = 0
        self.size = 1
        self.extents = (1, 1, 1)
        self.coords: dict[str, np.ndarray] = {}
        self.used: tuple[str, ...] = ()
        self.full = np.ones(1, bool)
        self._mask: np.ndarray | None = None
        self._lanes = np.zeros(0, np.int64)
        self.copies = None  # the block's async-copy state (`asynccopy.AsyncCopies`), lazily
        self.bulk = None  # its memory barriers and bulk copies (`mbarrier.BulkState`), lazily

    # -- threads -------------------------------------------------------------------------
    def setup_threads(self, x: object, y: object, z: object, used: tuple[str, ...]) -> None:
        """Lay out the block's threads; `used` are the tags some loop is bound to."""
        self.used = used
        self.extents = tuple(max(1, int(e)) for e in (x, y, z))
        ex, ey, ez = self.extents
        self.size = ex * ey * ez
        lane = np.arange(self.size, dtype=np.int64)
        self.coords = dict(zip(_TAGS, (lane % ex, lane // ex % ey, lane // (ex * ey))))
        self.full = np.ones(self.size, bool)
        self.copies = None  # per-thread state of a new block shape (the last one was checked)
        self.bulk = None

    def enter(self, mask, tag: str, extent, dtype: np.dtype):
        """The index of `tag` over the lanes and the mask of lanes below `extent` (or None)."""
        if isinstance(extent, np.ndarray):
            raise InternalError(f"the extent of the loop bound to {tag} differs between threads")
        index = self.coords[tag].astype(dtype)
        base = self.full if mask is None else mask
        return index, self.narrow(base, index < extent)

    def narrow(self, mask: np.ndarray, cond) -> np.ndarray | None:
        """The lanes of `mask` where `cond` holds, or None when there are none."""
        if not isinstance(cond, np.ndarray):
            return mask if cond else None
        narrowed = mask & cond
        return narrowed if narrowed.any() else None

    def narrow_not(self, mask: np.ndarray, cond) -> np.ndarray | None:
        if not isinstance(cond, np.ndarray):
            return None if cond else mask
        narrowed = mask & ~cond
        return narrowed if narrowed.any() else None

    def loop(self, mask: np.ndarray, lo, extent, dtype: np.dtype) -> Iterator[tuple]:
        """``(value, mask)`` per iteration; bounds that differ between threads iterate over the
        union of the threads' ranges, each iteration masked to the threads whose range has it."""
        if not isinstance(lo, np.ndarray) and not isinstance(extent, np.ndarray):
            for value in arange(lo, extent, dtype):
                yield value, mask
            return
        start = np.broadcast_to(np.asarray(lo, np.int64), mask.shape)
        stop = start + np.broadcast_to(np.asarray(extent, np.int64), mask.shape)
        if not (stop[mask] > start[mask]).any():
            return
        first, last = int(start[mask].min()), int(stop[mask].max())
        for value in np.arange(first, last, dtype=dtype):
            active = mask & (start <= value) & (value < stop)
            if active.any():
                yield value, active

    def select(self, cond, mask: np.ndarray, yes, no):
        """``cond ? yes : no`` evaluating each branch only on the lanes that take it."""
        if not isinstance(cond, np.ndarray):
            return yes(mask) if cond else no(mask)
        taken, other = mask & cond, mask & ~cond
        if not other.any():
            return yes(mask)
        if not taken.any():
            return no(mask)
        return np.where(cond, yes(taken), no(other))

    def barrier(self, mask: np.ndarray | None) -> None:
        if mask is not None and not mask.all():
            waiting = self.thread_str(int(np.flatnonzero(mask)[0]))
            missing = self.thread_str(int(np.flatnonzero(~mask)[0]))
            raise DivergentBarrierError(
                f"barrier in divergent code: thread {waiting} reaches a barrier that thread "
                f"{missing} of the same block skips (a guard or a thread-dependent loop bound "
                "around it); on a GPU this deadlocks or corrupts memory, so every thread must "
                "reach every barrier"
            )
        self.interval += 1

    def allreduce(
        self, combiners, sources, results, tags: tuple[str, ...], mask=None, lanes: int = 0
    ) -> None:
        """Every thread gets the combination of `sources` over the threads that share its
        indices outside `tags` (a block collective; see `ThreadAllReduce`); with `lanes`, over
        its group of that many lanes of a warp, the threads of `mask` (whole groups)."""
        if lanes:
            self._lanes_allreduce(combiners, sources, results, mask, lanes)
            return
        ex, ey, ez = self.extents
        axes = tuple(2 - _TAGS.index(tag) for tag in tags)  # lanes as a (z, y, x) grid
        for comb, source, result in zip(combiners, sources, results):
            grid = source.array[:, 0].reshape(ez, ey, ex)
            total = combine(comb, grid, axes)
            result.array[:, 0] = np.broadcast_to(np.expand_dims(total, axes), grid.shape).ravel()

    def _lanes_allreduce(self, combiners, sources, results, mask, lanes: int) -> None:
        active = np.ones(self.size, bool) if mask is None else mask
        groups = active.reshape(-1, lanes)
        if (groups.any(axis=1) != groups.all(axis=1)).any():
            raise DivergentBarrierError(
                f"a collective of {lanes} lanes reached by some of them only (a guard or a "
                "thread-dependent loop bound around it)"
            )
        for comb, source, result in zip(combiners, sources, results):
            total = combine(comb, source.array[:, 0].reshape(-1, lanes), (1,))
            spread = np.repeat(total, lanes)
            result.array[active, 0] = spread[active]

    def thread_str(self, lane: int) -> str:
        if lane == UNIFORM:
            return "(all threads, outside thread loops)"
        if not self.coords:
            return "(single thread)"
        parts = [f"{t[-1]}={int(self.coords[t][lane])}" for t in _TAGS if t in self.used]
        return f"({', '.join(parts)})"

    # -- memory --------------------------------------------------------------------------
    def alloc(self, name: str, scope: str, dtype: str, shape: tuple) -> Mem:
        if any(isinstance(n, np.ndarray) for n in shape):
            raise InternalError(f"the shape of buffer '{name}' differs between threads")
        dims = tuple(max(0, int(n)) for n in shape)
        # Fragments are per thread even without thread loops (the shape is each lane's share).
        lanes = scope == "local" and self.threaded or scope in FRAGMENT_SCOPES
        if lanes:
            dims = (self.size, *dims)
        array = np.full(dims, garbage(dtype), dtype=dt.to_numpy(dtype))
        return Mem(name, scope, array, lanes)

    def lanes_of(self, mask: np.ndarray) -> np.ndarray:
        """The active lanes of `mask` (cached: the statements of a block share masks)."""
        if mask is not self._mask:
            self._mask, self._lanes = mask, np.flatnonzero(mask)
        return self._lanes

    def load(self, mem: Mem, mask: np.ndarray | None, indices: tuple):
        if mask is None:
            self._check_scalar(mem, indices)
            if mem.scope == "shared":
                flat = np.array([self._flat(mem, indices)])
                self._track_read(mem, flat, np.array([UNIFORM]))
            return mem.array[(0, *indices)] if mem.lanes else mem.array[indices]
        lanes = self.lanes_of(mask)
        uniform = True
        for i in indices:
            if isinstance(i, np.ndarray):
                uniform = False
                break
        if uniform and not mem.lanes:
            self._check_scalar(mem, indices)
            if mem.scope == "shared":
                flat = np.full(len(lanes), self._flat(mem, indices))
                self._track_read(mem, flat, lanes)
            return mem.array[indices]
        idx = self._gather_indices(mem, lanes, indices)
        values = mem.array[(lanes, *idx)] if mem.lanes else mem.array[idx]
        if mem.scope == "shared":
            self._track_read(mem, self._flat(mem, idx, len(lanes)), lanes)
        if len(lanes) == self.size:
            return values
        out = np.zeros(self.size, mem.array.dtype)
        out[lanes] = values
        return out

    def store(self, mem: Mem, mask: np.ndarray | None, value, indices: tuple) -> None:
        if mask is None:
            self._check_scalar(mem, indices)
            if mem.scope == "shared":
                flat = np.array([self._flat(mem, indices)])
                self._track_write(mem, flat, np.array([UNIFORM]))
            if mem.lanes:
                mem.array[(slice(None), *indices)] = value
            else:
                mem.array[indices] = value
            return
        lanes = self.lanes_of(mask)
        idx = self._gather_indices(mem, lanes, indices)
        values = value[lanes] if isinstance(value, np.ndarray) else value
        if mem.lanes:
            mem.array[(lanes, *idx)] = values
            return
        flat = self._flat(mem, idx, len(lanes))
        self._check_duplicates(mem, flat, lanes)
        if mem.scope == "shared":
            self._track_write(mem, flat, lanes)
        if isinstance(values, np.ndarray) and not any(isinstance(i, np.ndarray) for i in idx):
            values = values[-1]  # one element, one writer (checked above): that lane's value
        mem.array[idx] = values

    def _gather_indices(self, mem: Mem, lanes: np.ndarray, indices: tuple) -> tuple:
        """The indices of the active lanes (arrays, or scalars where uniform), bounds-checked."""
        idx = tuple(i[lanes] if isinstance(i, np.ndarray) else i for i in indices)
        for i, n in zip(idx, mem.shape):
            if isinstance(i, np.ndarray):
                if not len(i) or (i.min() >= 0 and i.max() < n):
                    continue
                k = int(np.flatnonzero((i < 0) | (i >= n))[0])
            elif 0 <= i < n:
                continue
            else:
                k = 0
            where = [int(x[k]) if isinstance(x, np.ndarray) else int(x) for x in idx]
            self.out_of_bounds(mem, where, f" by thread {self.thread_str(int(lanes[k]))}")
        return idx

    def _flat(self, mem: Mem, indices: tuple, count: int | None = None):
        """Row-major element numbers of `indices`; an array of `count` when given."""
        flat = 0
        for i, n in zip(indices, mem.shape):
            flat = flat * int(n) + np.asarray(i, np.int64)
        if count is None:
            return int(flat)
        flat = np.asarray(flat, np.int64)
        return flat if flat.ndim else np.full(count, int(flat), np.int64)

    def _check_scalar(self, mem: Mem, indices: tuple) -> None:
        for i, n in zip(indices, mem.shape):
            if not 0 <= i < n:
                self.out_of_bounds(mem, [int(x) for x in indices], "")

    def out_of_bounds(self, mem: Mem, where: list[int], who: str = "") -> None:
        shown = ", ".join(str(x) for x in where)
        raise InternalError(
            f"out-of-bounds access {mem.name}[{shown}]{who}: '{mem.name}' ({mem.scope}) has "
            f"shape {tuple(int(n) for n in mem.shape)}; the loop nest is wrong, not the data"
        )

    def _element(self, mem: Mem, flat: int) -> str:
        where = np.unravel_index(int(flat), mem.shape) if mem.shape else ()
        return f"{mem.name}[{', '.join(str(int(x)) for x in where)}]"

    def _check_duplicates(self, mem: Mem, flat: np.ndarray, lanes: np.ndarray) -> None:
        if len(flat) < 2:
            return
        ranked = np.sort(flat)
        if not (ranked[1:] == ranked[:-1]).any():
            return
        order = np.argsort(flat, kind="stable")
        ranked = flat[order]
        same = np.flatnonzero(ranked[1:] == ranked[:-1])
        if len(same):
            a, b = int(lanes[order[same[0]]]), int(lanes[order[same[0] + 1]])
            raise RaceError(
                f"race on {mem.scope} buffer '{mem.name}': threads {self.thread_str(a)} and "
                f"{self.thread_str(b)} both write {self._element(mem, ranked[same[0]])} in one "
                "statement; each element must have one writer"
            )

    def _track_read(self, mem: Mem, flat: np.ndarray, tids: np.ndarray) -> None:
        if mem.inflight is not None:
            self._check_in_flight(mem, flat, tids, "reads")
        if mem.landed is not None and not (tids == MANY).all():  # MANY: a collective's own
            from .mbarrier import check_read  # it builds on this module

            check_read(self, mem, flat, tids)
        now = self.interval
        writer = mem.w_tid[flat]
        bad = (mem.w_at[flat] == now) & (writer != tids) & (writer != UNIFORM)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            self._race(mem, flat[k], "reads", tids[k], "wrote", writer[k])
        earlier = (mem.r_at[flat] == now) & (mem.r_tid[flat] != tids)
        mem.r_tid[flat] = tids
        mem.r_at[flat] = now
        several = earlier | (mem.r_tid[flat] != tids)
        mem.r_tid[flat[several]] = MANY

    def _track_write(
        self, mem: Mem, flat: np.ndarray, tids: np.ndarray, verb: str = "writes"
    ) -> None:
        if mem.inflight is not None:
            self._check_in_flight(mem, flat, tids, verb)
        now = self.interval
        writer, reader = mem.w_tid[flat], mem.r_tid[flat]
        after_write = (mem.w_at[flat] == now) & (writer != tids)
        after_read = (mem.r_at[flat] == now) & (reader != tids)
        if after_write.any():
            k = int(np.flatnonzero(after_write)[0])
            self._race(mem, flat[k], verb, tids[k], "wrote", writer[k])
        if after_read.any():
            k = int(np.flatnonzero(after_read)[0])
            self._race(mem, flat[k], verb, tids[k], "read", reader[k])
        mem.w_tid[flat] = tids
        mem.w_at[flat] = now

    def _check_in_flight(self, mem: Mem, flat: np.ndarray, tids: np.ndarray, verb: str) -> None:
        """An access to an element an async copy is still writing: undefined on hardware (the
        bytes land whenever the copy engine gets to them), so a race whoever issued it."""
        busy = mem.inflight[flat] > 0
        if busy.any():
            k = int(np.flatnonzero(busy)[0])
            if self.bulk is not None:
                from .mbarrier import in_flight_error  # it builds on this module

                in_flight_error(self, mem, int(flat[k]), int(tids[k]), verb)
            self.copies.in_flight_error(self, mem, int(flat[k]), int(tids[k]), verb)

    def _race(self, mem: Mem, flat, verb: str, tid, other_verb: str, other) -> None:
        who = self.thread_str(int(tid))
        if int(other) == MANY:
            them = "other threads"
        else:
            them = f"thread {self.thread_str(int(other))}"
        raise RaceError(
            f"race on shared buffer '{mem.name}' at {self._element(mem, flat)}: thread {who} "
            f"{verb} it after {them} {other_verb} it with no barrier in between (barrier "
            f"interval {self.interval}); a barrier() must separate them"
        )


def arange(lo, extent, dtype: np.dtype) -> np.ndarray:
    """The values of a loop ``for v in [lo, lo + extent)`` as numpy scalars of `dtype`."""
    start = int(lo)
    return np.arange(start, start + int(extent), dtype=dtype)
