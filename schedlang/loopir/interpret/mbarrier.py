"""Memory barriers and bulk copies (`MBarrier`, `BulkCopy`) for `schedlang.loopir.interpret`.

The model is CUDA's ``mbarrier`` with the copy engine's ``cp.async.bulk.tensor``. The
interpreter runs the threads of a block in lock step, so a warp-specialised pipeline (a producer
thread filling stages ahead, the other threads waiting for them) runs as one interleaving of
its roles: the one its loop is written in. What makes it right on hardware, where the roles run
apart, is its barriers, and those are checked here as the hardware would keep them:

- a barrier slot counts the arrivals of its current phase against the count it was initialised
  with, and the transaction bytes expected (``arrive.expect_tx``) against those of the bulk
  copies issued on it; when both are complete the phase completes, and the copies of that phase
  land (are written) then;
- a bulk copy reads its source when it is issued (zeros outside the source) and its elements
  are *in flight* until its phase completes: any access to them is a `RaceError`;
- ``wait(parity)`` passes when the slot's current phase has the other parity, as on hardware;
  a wait that would not pass in this interleaving is an `InternalError` (on a GPU it waits for
  ever, or for another role that this order has already run past: the barriers are wrong
  either way). A wait that passes orders the waiter after the arrivals of the phases it has
  seen complete, and after the copies they counted: nothing else does (no block barrier);
- a thread that reads an element a bulk copy landed must have waited for a phase of that slot
  at or after the copy's (`check_read`): reading a stage without waiting for its barrier is a
  `RaceError` even where this interleaving happens to have landed it;
- a bulk copy may overwrite an element only once every thread that read it has released it:
  arrived, after its read, in a phase that the issuing thread has seen complete (on a GPU the
  reads, a warpgroup's products among them, may otherwise still be running). Reads and
  arrivals are ordered by a clock; the reads are kept per element by warp.

The state lives in ``Runtime.bulk`` (made on first use, dropped at the end of every block by
`finish` and by ``Runtime.setup_threads``); the elements a bulk copy writes carry their slot,
phase, last read and readers in ``Mem.landed`` (`_LANDED`).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import numpy as np

from ...errors import InternalError
from .runtime import UNIFORM, Mem, RaceError, Runtime

WARP = 32
# the rows of ``Mem.landed``: the barrier, slot and phase a copy landed the element in (-1:
# none), the clock of its last read and the warps that read it since it was written (bits)
KEY, SLOT, PHASE, READ_AT, READERS = range(5)


@dataclass
class _Slots:
    """The state of the slots of one barrier buffer."""

    mem: Mem
    key: int
    count: np.ndarray  # arrivals per phase (0: never initialised)
    arrivals: np.ndarray
    expected: np.ndarray  # transaction bytes expected in the current phase
    issued: np.ndarray  # bytes of the copies issued in the current phase
    completed: np.ndarray  # phases completed
    seen: np.ndarray  # [thread, slot]: phases completed when the thread last waited
    queue: list = field(default_factory=list)  # (slot, dst Mem, flat, values, issuer)


class BulkState:
    """The barriers and copies in flight of one block."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.slots: dict[int, _Slots] = {}
        self.clock = 0  # orders reads and arrivals
        # per (lane, barrier key, slot): the clocks and phases of the lane's arrivals, in order
        self.arrivals: dict[tuple[int, int, int], tuple[list[int], list[int]]] = {}

    def tick(self) -> int:
        self.clock += 1
        return self.clock

    def released(self, lane: int, after: int, seen: dict[tuple[int, int], int]) -> bool:
        """Whether `lane` arrived after clock `after` in a phase that `seen` (barrier key and
        slot -> phases the issuer has seen complete) holds."""
        for (key, slot), phases in seen.items():
            found = self.arrivals.get((lane, key, slot))
            if found is None:
                continue
            clocks, phase_of = found
            k = bisect.bisect_right(clocks, after)
            if k < len(clocks) and phase_of[k] < phases:
                return True
        return False

    def of(self, mem: Mem) -> _Slots:
        found = self.slots.get(id(mem))
        if found is None:
            n = int(np.prod(mem.shape, dtype=np.int64))
            zeros = [np.zeros(n, np.int64) for _ in range(5)]
            seen = np.zeros((self.size, n), np.int64)
            found = _Slots(mem, len(self.slots), *zeros, seen)
            self.slots[id(mem)] = found
        return found

    def by_key(self, key: int) -> _Slots:
        return next(s for s in self.slots.values() if s.key == key)


def _state(rt: Runtime) -> BulkState:
    if rt.bulk is None:
        rt.bulk = BulkState(rt.size)
    return rt.bulk


def _lanes(rt: Runtime, mask) -> np.ndarray:
    return np.arange(rt.size, dtype=np.int64) if mask is None else rt.lanes_of(mask)


def _slot(bar: _Slots, index, head: str) -> int:
    if isinstance(index, np.ndarray):
        values = np.unique(index)
        if len(values) != 1:
            raise InternalError(f"{head}: the barrier's index differs between threads")
        index = values[0]
    k = int(index)
    if not 0 <= k < len(bar.count):
        raise InternalError(f"{head}: slot {k} of '{bar.mem.name}' is out of its {len(bar.count)}")
    return k


def _at(bar: _Slots, k: int) -> str:
    return f"{bar.mem.name}[{k}]"


def init(rt: Runtime, mask, mem: Mem, index, count: int, head: str) -> None:
    """Run an ``init``: one thread sets the slot's arrivals per phase."""
    lanes = _lanes(rt, mask)
    if mask is not None and len(lanes) != 1:
        raise InternalError(f"{head}: {len(lanes)} threads initialise one barrier; one must")
    bar = _state(rt).of(mem)
    k = _slot(bar, index, head)
    bar.count[k], bar.arrivals[k], bar.expected[k], bar.issued[k] = count, 0, 0, 0


def arrive(
    rt: Runtime, mask, mem: Mem, index, expect: int, when, head: str, per_warp: bool = False
) -> None:
    """Run an ``arrive``: one arrival per thread where `when` holds (and `expect` bytes
    each, when > 0); with `per_warp`, one per warp, for its threads, every one of which must
    run it (they meet at a ``__syncwarp`` first)."""
    if isinstance(when, np.ndarray):
        mask = rt.narrow(rt.full if mask is None else mask, when)
        if mask is None:
            return
    elif not when:
        return
    lanes = _lanes(rt, mask)
    state = _state(rt)
    bar = state.of(mem)
    k = _slot(bar, index, head)
    _initialised(bar, k, head)
    now, phase = state.tick(), int(bar.completed[k])
    for lane in lanes.tolist():
        clocks, phases = state.arrivals.setdefault((lane, bar.key, k), ([], []))
        clocks.append(now)
        phases.append(phase)
    arrivals = len(lanes)
    if per_warp:
        warps = np.unique(lanes // WARP)
        whole = np.arange(rt.size, dtype=np.int64)[np.isin(np.arange(rt.size) // WARP, warps)]
        if len(whole) != len(lanes):
            raise InternalError(
                f"{head}: {len(lanes)} threads of {len(warps)} warps arrive once a warp; each "
                "warp's threads must all arrive (they meet at a __syncwarp first)"
            )
        arrivals = len(warps)
    bar.arrivals[k] += arrivals
    bar.expected[k] += expect * arrivals
    if bar.arrivals[k] > bar.count[k]:
        raise InternalError(
            f"{head}: {int(bar.arrivals[k])} arrivals on {_at(bar, k)} in one phase, which "
            f"completes after {int(bar.count[k])}; the arrivals of the next phase would be "
            "counted in this one"
        )
    _complete(rt, bar, k)


def wait(rt: Runtime, mask, mem: Mem, index, parity, head: str) -> None:
    """Run a ``wait``: passes when the slot's phase has the other parity (see the module)."""
    lanes = _lanes(rt, mask)
    bar = _state(rt).of(mem)
    k = _slot(bar, index, head)
    _initialised(bar, k, head)
    if isinstance(parity, np.ndarray):
        if len(np.unique(parity[lanes])) != 1:
            raise InternalError(f"{head}: the parity differs between threads")
        parity = parity[lanes][0]
    if int(bar.completed[k]) % 2 == int(parity) % 2:
        raise InternalError(
            f"{head}: thread {rt.thread_str(int(lanes[0]))} waits for the phase of parity "
            f"{int(parity)} of {_at(bar, k)}, which has not completed ({int(bar.completed[k])} "
            f"phases done; the current one has {int(bar.arrivals[k])} of "
            f"{int(bar.count[k])} arrivals and {int(bar.issued[k])} of {int(bar.expected[k])} "
            "bytes): on a GPU this thread waits for ever, or for a role that the pipeline's "
            "order has already run past"
        )
    bar.seen[lanes, k] = bar.completed[k]


def issue(rt: Runtime, mask, dst: Mem, dst_idx, src: Mem, src_idx, shape, mem: Mem, index, head):
    """Run a `BulkCopy`: read the box now (zeros outside `src`), queue its landing on the
    barrier slot's current phase."""
    lanes = _lanes(rt, mask)
    if mask is not None and len(lanes) != 1:
        raise InternalError(f"{head}: {len(lanes)} threads issue one bulk copy; one must")
    issuer = int(lanes[0]) if mask is not None else (UNIFORM if rt.size > 1 else 0)
    bar = _state(rt).of(mem)
    k = _slot(bar, index, head)
    _initialised(bar, k, head)
    first = [_one(i, lanes, head) for i in src_idx]
    grids = np.meshgrid(*(np.arange(n) for n in shape), indexing="ij")
    where = [g.ravel() + f for g, f in zip(grids, first)]
    inside = np.ones(len(where[0]), bool)
    for w, n in zip(where, src.shape):
        inside &= (w >= 0) & (w < n)
    values = np.zeros(len(inside), src.array.dtype)
    at = tuple(np.where(inside, w, 0) for w in where)
    values[inside] = src.array[at][inside]
    lead = [_one(i, lanes, head) for i in dst_idx]
    rank = len(shape)
    dst_where = [np.full(len(inside), i) for i in lead[: len(lead) - rank]]
    dst_where += [g.ravel() + f for g, f in zip(grids, lead[len(lead) - rank :])]
    for d, (w, n) in enumerate(zip(dst_where, dst.shape)):
        if w.min() < 0 or w.max() >= n:
            raise InternalError(
                f"{head}: the box reaches past dimension {d} of '{dst.name}' (extent {n})"
            )
    flat = np.ravel_multi_index(tuple(dst_where), dst.shape)
    size = int(np.prod(dst.shape, dtype=np.int64))
    if dst.inflight is None:
        dst.inflight = np.zeros(size, np.int64)
    if dst.landed is None:
        dst.landed = np.full((5, size), -1, np.int64)
        dst.landed[READERS] = 0
    busy = dst.inflight[flat] > 0
    if busy.any():
        in_flight_error(
            rt, dst, int(flat[np.flatnonzero(busy)[0]]), issuer, "issues a bulk copy to"
        )
    _check_released(rt, dst, flat, issuer, head)
    np.add.at(dst.inflight, flat, 1)
    bar.queue.append((k, dst, flat, values, issuer))
    bar.issued[k] += values.nbytes
    _complete(rt, bar, k)


def _one(x, lanes, head: str) -> int:
    if isinstance(x, np.ndarray):
        values = np.unique(x[lanes])
        if len(values) != 1:  # pragma: no cover - one issuing thread
            raise InternalError(f"{head}: the box's origin differs between threads")
        return int(values[0])
    return int(x)


def _initialised(bar: _Slots, k: int, head: str) -> None:
    if bar.count[k] <= 0:
        raise InternalError(f"{head}: {_at(bar, k)} is used before mbarrier_init")


def _complete(rt: Runtime, bar: _Slots, k: int) -> None:
    """Complete the slot's phase if every arrival and byte is in: its copies land."""
    if bar.arrivals[k] < bar.count[k] or bar.issued[k] != bar.expected[k]:
        return
    phase = int(bar.completed[k])
    keep = []
    for entry in bar.queue:
        slot, dst, flat, values, _ = entry
        if slot != k:
            keep.append(entry)
            continue
        np.subtract.at(dst.inflight, flat, 1)
        np.put(dst.array, flat, values)
        dst.landed[KEY, flat], dst.landed[SLOT, flat], dst.landed[PHASE, flat] = bar.key, k, phase
        dst.landed[READ_AT, flat], dst.landed[READERS, flat] = -1, 0
    bar.queue = keep
    bar.completed[k] += 1
    bar.arrivals[k], bar.expected[k], bar.issued[k] = 0, 0, 0


def _check_released(rt: Runtime, dst: Mem, flat: np.ndarray, issuer: int, head: str) -> None:
    """A `RaceError` where an element of the box was read by a thread that has not released
    it to the issuer (module doc)."""
    readers = np.bitwise_or.reduce(dst.landed[READERS, flat])
    if not readers:
        return
    state = rt.bulk
    after = int(dst.landed[READ_AT, flat].max())
    lanes = range(rt.size) if issuer == UNIFORM else (issuer,)
    for lane in lanes:
        seen = {
            (bar.key, k): int(bar.seen[lane, k])
            for bar in state.slots.values()
            for k in range(len(bar.count))
            if bar.seen[lane, k] > 0
        }
        for warp in range(rt.size // WARP + 1):
            if not readers >> warp & 1:
                continue
            for reader in range(warp * WARP, min(rt.size, (warp + 1) * WARP)):
                if not state.released(reader, after, seen):
                    k = int(flat[np.flatnonzero(dst.landed[READERS, flat] >> warp & 1)[0]])
                    raise RaceError(
                        f"race on shared buffer '{dst.name}' at {rt._element(dst, k)}: thread "
                        f"{rt.thread_str(lane)} overwrites it by a bulk copy ({head}) while "
                        f"thread {rt.thread_str(reader)}, which read it, has not released it: "
                        "no arrival of that thread after its read is in a phase the issuing "
                        "thread waited for (mbarrier_wait on the barrier its readers arrive on)"
                    )


def check_read(rt: Runtime, mem: Mem, flat: np.ndarray, readers: np.ndarray, span: int = 1):
    """Record reads of elements a bulk copy writes, by `readers` (per element, a lane, or
    `UNIFORM` for all threads; with `span` > 1 the first lane of that many warps, which read
    together), and raise a `RaceError` where a reader has not waited for the phase in which
    the element landed."""
    state = rt.bulk
    if state is None:
        return
    landed = mem.landed
    key, slot, phase = landed[KEY, flat], landed[SLOT, flat], landed[PHASE, flat]
    for bar in state.slots.values():  # a few barriers; each checked for all its elements
        mine = np.flatnonzero(key == bar.key)
        if not len(mine):
            continue
        who = readers[mine]
        # a uniform read must be seen by every thread: the least any thread has seen
        seen = np.where(
            who == UNIFORM,
            bar.seen[:, slot[mine]].min(axis=0),
            bar.seen[np.maximum(who, 0), slot[mine]],
        )
        late = np.flatnonzero(seen <= phase[mine])
        if len(late):
            k = int(mine[late[0]])
            lane = int(readers[k])
            if lane == UNIFORM:
                lane = int(np.argmin(bar.seen[:, slot[k]]))
            raise RaceError(
                f"race on shared buffer '{mem.name}' at {rt._element(mem, int(flat[k]))}: "
                f"thread {rt.thread_str(lane)} reads it, which a bulk copy landed in phase "
                f"{int(phase[k])} of {_at(bar, int(slot[k]))}, without having waited for that "
                "phase (mbarrier_wait): on a GPU the bytes may not have arrived yet"
            )
    first = np.where(readers == UNIFORM, 0, readers) // WARP
    count = np.where(readers == UNIFORM, -(-rt.size // WARP), span)
    bits = ((np.int64(1) << count) - 1) << first
    landed[READ_AT, flat] = state.tick()
    np.bitwise_or.at(landed[READERS], flat, bits)


def in_flight_error(rt: Runtime, mem: Mem, flat: int, tid: int, verb: str) -> None:
    """Raise the `RaceError` for an access to an element a bulk copy is still writing."""
    for bar in rt.bulk.slots.values() if rt.bulk is not None else ():
        for k, dst, where, _, issuer in bar.queue:
            if dst is mem and (where == flat).any():
                raise RaceError(
                    f"race on shared buffer '{mem.name}' at {rt._element(mem, flat)}: thread "
                    f"{rt.thread_str(tid)} {verb} it while the bulk copy to it that thread "
                    f"{rt.thread_str(issuer)} issued is in flight: its phase of "
                    f"{_at(bar, k)} has {int(bar.arrivals[k])} of {int(bar.count[k])} "
                    f"arrivals and {int(bar.issued[k])} of {int(bar.expected[k])} bytes; wait "
                    "for the phase (mbarrier_wait) before using the copy, and do not overwrite "
                    "a stage before its readers have released it"
                )


def finish(rt: Runtime) -> None:
    """The end of a block: no bulk copy may still be in flight; the state starts afresh."""
    state, rt.bulk = rt.bulk, None
    if state is None:
        return
    for bar in state.slots.values():
        if bar.queue:
            k, dst, flat, _, issuer = bar.queue[0]
            raise InternalError(
                f"bulk copies never completed: the copy to {rt._element(dst, int(flat[0]))} by "
                f"thread {rt.thread_str(issuer)} is still in flight at the end of the block (its "
                f"phase of {_at(bar, k)} has {int(bar.arrivals[k])} of {int(bar.count[k])} "
                f"arrivals and {int(bar.issued[k])} of {int(bar.expected[k])} bytes)"
            )
