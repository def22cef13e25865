"""Asynchronous copies (`AsyncCopy`, `AsyncCommit`, `AsyncWait`) for `schedlang.loopir.interpret`.

The model is CUDA's ``cp.async`` + ``cp.async.commit_group`` + ``cp.async.wait_group N``, kept
per thread, because a pipeline that is only right by luck of timing must fail here as it would
(sometimes) on a GPU:

- a copy reads its source *when it is issued* and queues the write of those values into the
  thread's open group; nothing reaches shared memory yet;
- a commit closes the thread's open group (even an empty one) and puts it in flight;
- ``wait(pending)`` lands (writes) every committed group of the thread except the `pending`
  most recent ones. The writes are then ordinary stores of that thread for the race tracking,
  so other threads need a barrier after the wait before they read them. Copies never committed
  are not waited for.

While a copy is queued, its destination elements are *in flight* (``Mem.inflight`` counts the
copies writing each one): any read, store, or second copy of such an element, by any thread,
is a `RaceError` (on hardware the bytes land whenever the copy engine gets to them). Issuing
a copy also counts as a write against the accesses of other threads in the same barrier
interval: the bytes may land at once. A copy still queued when its block ends is an
`InternalError`.

A copy outside thread loops is issued by thread 0 alone, as the CUDA code generator narrows it
(`codegen.nvptx.uniform`: every thread issuing it would write the same bytes many times), while
commits and waits outside thread loops are every thread's. So it is thread 0's wait that lands
it, and the landing is thread 0's store: the other threads read it only after a barrier that
follows that wait, exactly as on the GPU. (With a single thread it is a uniform store.)

The per-thread counters live in ``Runtime.copies``, made on first use and dropped at the end of
every block (`finish`) and by ``Runtime.setup_threads``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import InternalError
from ...ir import dtype as dt
from .runtime import UNIFORM, Mem, RaceError, Runtime

_BYTES = (4, 8, 16)  # what cp.async moves


@dataclass
class _Copy:
    """One `AsyncCopy` statement's writes still queued: a row per issuing thread."""

    mem: Mem
    owners: np.ndarray  # the lanes that issued it (their group state)
    tids: np.ndarray  # per row, who writes for the race tracking: the lane (UNIFORM: 1 thread)
    groups: np.ndarray  # per row, the group of its owner that the copy belongs to
    flat: np.ndarray  # (rows, lanes): element numbers in `mem`
    values: np.ndarray  # (rows, lanes): the values read at issue
    uniform: bool  # issued outside thread loops (by thread 0 alone)

    def rows(self, keep: np.ndarray) -> _Copy:
        return _Copy(
            self.mem,
            self.owners[keep],
            self.tids[keep],
            self.groups[keep],
            self.flat[keep],
            self.values[keep],
            self.uniform,
        )


class AsyncCopies:
    """The async-copy state of the threads of one block."""

    def __init__(self, size: int) -> None:
        self.committed = np.zeros(size, np.int64)  # groups committed = the open group's number
        self.landed = np.zeros(size, np.int64)  # groups below this have been waited for
        self.queue: list[_Copy] = []  # in issue order

    def in_flight_error(self, rt: Runtime, mem: Mem, flat: int, tid: int, verb: str) -> None:
        """Raise the `RaceError` for an access by `tid` to element `flat` of `mem`, which a
        queued copy is writing (called by the runtime's race tracking)."""
        for c in self.queue:
            if c.mem is mem:
                hit = np.flatnonzero((c.flat == flat).any(axis=1))
                if len(hit):
                    r = int(hit[0])
                    break
        else:  # pragma: no cover - the counts and the queue disagree: a bug of this file
            raise InternalError(f"async copy bookkeeping lost {rt._element(mem, flat)}")
        owner, group = int(c.owners[r]), int(c.groups[r])
        issuer = f"thread {rt.thread_str(owner)}"
        if c.uniform:
            issuer += " (alone, for the code outside thread loops)"
        if group >= self.committed[owner]:
            why = "it was never committed (async_commit); async_wait waits for committed groups"
        else:
            why = (
                f"its group {group} is still in flight: thread {rt.thread_str(owner)} committed "
                f"{int(self.committed[owner])} group(s) and waited for the first "
                f"{int(self.landed[owner])}; async_wait(pending=N) leaves the N most recent in "
                "flight"
            )
        raise RaceError(
            f"race on shared buffer '{mem.name}' at {rt._element(mem, flat)}: thread "
            f"{rt.thread_str(tid)} {verb} it while the async copy to it that {issuer} issued is "
            f"still in flight ({why}); the copy's thread must async_wait for it, and a barrier() "
            "must follow before other threads use it"
        )


def _state(rt: Runtime) -> AsyncCopies:
    if rt.copies is None:
        rt.copies = AsyncCopies(rt.size)
    return rt.copies


def _owners(rt: Runtime, mask) -> tuple[np.ndarray, np.ndarray]:
    """The lanes that run a commit or wait and who they are for the race tracking: every
    thread outside thread loops."""
    if mask is None:
        return np.arange(rt.size, dtype=np.int64), np.full(rt.size, UNIFORM, np.int64)
    lanes = rt.lanes_of(mask)
    return lanes, lanes


def _issuers(rt: Runtime, mask) -> tuple[np.ndarray, np.ndarray]:
    """The lanes that issue a copy and who they write as: outside thread loops thread 0 alone
    (see the module), which is every thread where the block has one."""
    if mask is None:
        return np.zeros(1, np.int64), np.full(1, UNIFORM if rt.size == 1 else 0, np.int64)
    return _owners(rt, mask)


def check_copy(dst, src, lanes: int, head: str) -> None:
    """The structure `AsyncCopy` needs (what cp.async can do), checked once at compile time:
    `dst` and `src` are `Buffer`s."""
    if src.scope != "global" or dst.scope != "shared":
        raise InternalError(
            f"{head}: an async copy goes from global to shared memory, not from "
            f"'{src.name}' ({src.scope}) to '{dst.name}' ({dst.scope})"
        )
    if src.dtype != dst.dtype:
        raise InternalError(
            f"{head}: an async copy does not convert ({src.dtype} '{src.name}' to {dst.dtype} "
            f"'{dst.name}')"
        )
    size = dt.to_numpy(dst.dtype).itemsize * lanes if isinstance(lanes, int) else 0
    if not isinstance(lanes, int) or lanes < 1 or size not in _BYTES:
        raise InternalError(
            f"{head}: an async copy moves 4, 8 or 16 bytes; {lanes!r} lanes of {dst.dtype} are "
            f"{size} bytes"
        )
    if not dst.shape or not src.shape:
        raise InternalError(f"{head}: an async copy runs along the last dimension of its buffers")


def issue(
    rt: Runtime, mask, dst: Mem, dst_idx, dst_strides, src: Mem, src_idx, src_strides, n, when
):
    """Run an `AsyncCopy` of `n` lanes: read the source now, queue the writes; where `when`
    (None: always) is false, zeros are queued and the source is not read."""
    owners, tids = _issuers(rt, mask)
    rows = len(owners)
    dst_at = _elements(rt, dst, owners, tids, mask, dst_idx, dst_strides, n)
    if when is None:
        values = src.array[_elements(rt, src, owners, tids, mask, src_idx, src_strides, n)]
    else:
        read = np.broadcast_to(np.asarray(_rows(when, owners, mask), bool), (rows,))
        # rows that read nothing point at element 0 (never read) rather than out of bounds
        at = tuple(np.where(read, _rows(i, owners, mask), 0) for i in src_idx)
        values = src.array[_elements(rt, src, owners, tids, None, at, src_strides, n)]
        values = np.where(read[:, None], values, np.zeros((), src.array.dtype))
    flat = np.ravel_multi_index(dst_at, dst.shape).reshape(rows, n)
    each = np.repeat(tids, n)
    rt._check_duplicates(dst, flat.ravel(), each)
    rt._track_write(dst, flat.ravel(), each, "issues an async copy to")
    if dst.inflight is None:
        dst.inflight = np.zeros(int(np.prod(dst.shape, dtype=np.int64)), np.int64)
    np.add.at(dst.inflight, flat.ravel(), 1)
    state = _state(rt)
    groups = state.committed[owners].copy()
    copy = _Copy(dst, owners.copy(), tids.copy(), groups, flat, values, mask is None)
    state.queue.append(copy)


def _rows(x, owners, mask):
    """The value of `x` (an array over the block's threads, or one value) on each issuer."""
    return x[owners] if isinstance(x, np.ndarray) and mask is not None else x


def _elements(rt: Runtime, mem: Mem, owners, tids, mask, indices, strides, n) -> tuple:
    """The (rows, n) indices of the elements each row's copy touches in `mem`, checked for
    bounds and for the alignment cp.async needs (the first element at a multiple of `n`)."""
    rows = len(owners)
    idx = []
    for i in indices:
        i = i[owners] if isinstance(i, np.ndarray) and mask is not None else i
        idx.append(np.broadcast_to(np.asarray(i, np.int64), (rows,)))
    start = list(idx)
    idx[-1] = idx[-1][:, None] + np.arange(n)
    full = tuple(np.broadcast_to(i[:, None] if i.ndim == 1 else i, (rows, n)) for i in idx)
    for i, size in zip(full, mem.shape):
        bad = (i < 0) | (i >= size)
        if bad.any():
            r, col = (int(x) for x in np.argwhere(bad)[0])
            who = f" by the async copy of thread {rt.thread_str(int(tids[r]))}"
            rt.out_of_bounds(mem, [int(x[r, col]) for x in full], who)
    if strides is None:
        strides = [int(np.prod(mem.shape[d + 1 :], dtype=np.int64)) for d in range(len(mem.shape))]
    offset = sum(i * np.asarray(s, np.int64) for i, s in zip(start, strides))
    bad = offset % n != 0
    if np.any(bad):
        r = int(np.flatnonzero(np.broadcast_to(bad, (rows,)))[0])
        where = ", ".join(str(int(i[r])) for i in start)
        size = mem.array.itemsize * n
        raise InternalError(
            f"misaligned async copy of {size} bytes at {mem.name}[{where}] by thread "
            f"{rt.thread_str(int(tids[r]))}: element {int(np.broadcast_to(offset, (rows,))[r])}"
            f" of '{mem.name}' is not a multiple of {n} elements; cp.async needs both ends "
            f"aligned to the copy's {size} bytes"
        )
    return full


def commit(rt: Runtime, mask) -> None:
    """Run an `AsyncCommit`: each thread's open group is closed and in flight."""
    owners, _ = _owners(rt, mask)
    _state(rt).committed[owners] += 1


def wait(rt: Runtime, mask, pending: int) -> None:
    """Run an `AsyncWait`: each thread lands its committed groups but the `pending` newest."""
    owners, _ = _owners(rt, mask)
    state = _state(rt)
    state.landed[owners] = np.maximum(state.landed[owners], state.committed[owners] - pending)
    keep = []
    for c in state.queue:
        ready = c.groups < state.landed[c.owners]
        if ready.any():
            _land(rt, c.rows(ready))
        if not ready.all():
            keep.append(c.rows(~ready))
    state.queue = keep


def _land(rt: Runtime, c: _Copy) -> None:
    """Write the rows of `c` into shared memory, as stores of their threads."""
    flat = c.flat.ravel()
    np.subtract.at(c.mem.inflight, flat, 1)
    np.put(c.mem.array, flat, c.values.ravel())
    tids = np.repeat(c.tids, c.flat.shape[1])
    rt._track_write(c.mem, flat, tids, "lands an async copy on")


def finish(rt: Runtime) -> None:
    """The end of a block: every copy must have been waited for; the state starts afresh."""
    state, rt.copies = rt.copies, None
    if state is None or not state.queue:
        return
    c = state.queue[0]
    mems = {id(x.mem): x.mem for x in state.queue}.values()
    count = sum(int((m.inflight > 0).sum()) for m in mems)
    committed = c.groups[0] < state.committed[c.owners[0]]
    hint = (
        "wait for it with async_wait(pending=0)"
        if committed
        else "it was never committed: async_commit() it, then wait for it with async_wait"
    )
    raise InternalError(
        f"async copies never waited for: {count} element(s) are still in flight at the end of "
        f"the block, the first {rt._element(c.mem, int(c.flat[0, 0]))} copied by thread "
        f"{rt.thread_str(int(c.tids[0]))}; {hint} before the block ends (and before the "
        "shared memory is used)"
    )
